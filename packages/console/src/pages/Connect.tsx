/**
 * "Connect a client": the exact settings for OpenAI-style apps, Gemini
 * clients, gemini-cli, Claude Code and Codex CLI, filled in with this
 * server's address, one of the user's keys (picked by name; its secret is
 * filled in only for the key created last in this tab, as the console knows
 * it only then, otherwise a placeholder stands for it) and a model that key
 * may call.
 *
 * @since 0.1.0
 */
import { Alert, Badge, Card, Group, Select, SimpleGrid, Stack, Text, ThemeIcon, Title } from "@mantine/core"
import { IconBrandGoogle, IconBrandOpenai, IconKey, IconTerminal2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import { type ReactNode, useState } from "react"
import { CopyField, PageHeader, Snippet } from "../components/Bits.tsx"
import { QueryState } from "../components/States.tsx"
import { call, type Contract } from "../lib/api.ts"
import { useI18n } from "../lib/i18n.tsx"
import { useNewKey } from "../lib/newKey.ts"

/** What the snippets show where the user's key goes when the console does not know it. @category snippets */
export const KEY_PLACEHOLDER = "YOUR_MODELGATE_KEY"

/** The snippets of the page, for one server and a key (or the placeholder). @category snippets */
export const snippets = (info: Contract.ConnectInfo, key: string = KEY_PLACEHOLDER, picked?: string) => {
  const model = picked ?? info.exampleModel ?? "MODEL"
  return {
    openaiPython: `from openai import OpenAI

client = OpenAI(base_url="${info.openaiBaseUrl}", api_key="${key}")
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`,
    genaiJs: `import { GoogleGenAI } from "@google/genai"

const ai = new GoogleGenAI({
  apiKey: "${key}",
  httpOptions: { baseUrl: "${info.geminiBaseUrl}", apiVersion: "${info.geminiApiVersion}" },
})
const reply = await ai.models.generateContent({ model: "${model}", contents: "Hello!" })
console.log(reply.text)`,
    geminiCliEnv: `export GEMINI_API_KEY="${key}"
export GOOGLE_GEMINI_BASE_URL="${info.geminiBaseUrl}"
gemini --model ${model}`,
    geminiCliSettings: `{
  "security": {
    "auth": { "selectedType": "gemini-api-key" }
  }
}`,
    claudeCodeEnv: `export ANTHROPIC_BASE_URL="${info.baseUrl}"
export ANTHROPIC_AUTH_TOKEN="${key}"
claude --model ${model}`,
    claudeCodeSettings: `{
  "env": {
    "ANTHROPIC_BASE_URL": "${info.baseUrl}",
    "ANTHROPIC_AUTH_TOKEN": "${key}",
    "ANTHROPIC_MODEL": "${model}",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL": "${model}",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"
  }
}`,
    codexConfig: `model = "${model}"
model_provider = "modelgate"

[model_providers.modelgate]
name = "modelgate"
base_url = "${info.openaiBaseUrl}"
env_key = "MODELGATE_API_KEY"
wire_api = "responses"`,
    codexEnv: `export MODELGATE_API_KEY="${key}"
codex`,
    curl: `curl ${info.openaiBaseUrl}/chat/completions \\
  -H "Authorization: Bearer ${key}" \\
  -H "Content-Type: application/json" \\
  -d '{"model": "${model}", "messages": [{"role": "user", "content": "Hello!"}]}'`
  }
}

function Section(
  { icon, title, hint, children }: {
    readonly icon: ReactNode
    readonly title: string
    readonly hint: string
    readonly children: ReactNode
  }
) {
  return (
    <Card withBorder radius="md" padding="lg">
      <Group gap="sm" mb="xs">
        <ThemeIcon variant="light" size="lg" radius="md">{icon}</ThemeIcon>
        <Title order={4}>{title}</Title>
      </Group>
      <Text size="sm" c="dimmed" mb="md">{hint}</Text>
      <Stack gap="sm">{children}</Stack>
    </Card>
  )
}

/** The connect page. @category pages */
export function ConnectPage() {
  const { t } = useI18n()
  const query = useQuery({ queryKey: ["connect"], queryFn: () => call((api) => api.account.connect()) })
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => call((api) => api.keys.list()) })
  const models = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  const newKey = useNewKey()
  const usable = (keys.data?.data ?? []).filter((k) => k.enabled && (k.expiresAt === null || k.expiresAt > Date.now()))
  const [keyId, setKeyId] = useState<string | null>(null)
  const [model, setModel] = useState<string | null>(null)
  // The key created last in this tab first (its secret is known), else the first usable key.
  const key = usable.find((k) => k.id === keyId) ??
    usable.find((k) => k.name === newKey?.name) ?? usable[0]
  /** The models the picked key may call: its own list, else every model its group reaches. */
  const allowed = key === undefined
    ? []
    : key.models.length > 0
    ? [...key.models]
    : (models.data?.groups.find((g) => g.name === key.group)?.models ?? []).map((m) => m.id)
  const pickedModel = model !== null && allowed.includes(model) ? model : allowed[0]
  const secret = key !== undefined && newKey !== undefined && key.name === newKey.name ? newKey.secret : undefined
  return (
    <>
      <PageHeader title={t("connect.title")} subtitle={t("connect.subtitle")} />
      <QueryState query={query}>
        {(info) => {
          const s = snippets(info, secret, pickedModel)
          return (
            <Stack gap="lg">
              <Card withBorder radius="md" padding="md">
                <SimpleGrid cols={{ base: 1, sm: 2 }}>
                  <Select
                    label={t("connect.pickKey")}
                    placeholder={t("connect.noKeys")}
                    data={usable.map((k) => ({ value: k.id, label: `${k.name} (${k.prefix}…)` }))}
                    value={key?.id ?? null}
                    onChange={setKeyId}
                    allowDeselect={false}
                    data-testid="connect-key-picker"
                  />
                  <Select
                    label={t("connect.pickModel")}
                    placeholder={t("connect.noModels")}
                    data={allowed}
                    value={pickedModel ?? null}
                    onChange={setModel}
                    allowDeselect={false}
                    searchable
                    data-testid="connect-model-picker"
                  />
                </SimpleGrid>
              </Card>
              <Alert variant="light" icon={<IconKey size={18} />} data-testid="connect-key">
                {key === undefined
                  ? t("connect.keyPlaceholder", { placeholder: KEY_PLACEHOLDER })
                  : secret !== undefined
                  ? t("connect.keyFilled", { name: key.name })
                  : t("connect.keyHidden", { name: key.name, placeholder: KEY_PLACEHOLDER })}
              </Alert>
              <SimpleGrid cols={{ base: 1, md: 2 }}>
                <Section
                  icon={<IconBrandOpenai size={20} />}
                  title={t("connect.openai")}
                  hint={t("connect.openaiHint", { base: info.openaiBaseUrl })}
                >
                  <CopyField label={t("connect.baseUrl")} value={info.openaiBaseUrl} testId="openai-base" />
                  <CopyField label={t("connect.openaiNoV1")} value={info.baseUrl} />
                  <Snippet code={s.openaiPython} />
                </Section>
                <Section
                  icon={<IconBrandGoogle size={20} />}
                  title={t("connect.gemini")}
                  hint={t("connect.geminiHint")}
                >
                  <CopyField label={t("connect.baseUrl")} value={info.geminiBaseUrl} testId="gemini-base" />
                  <CopyField label={t("connect.apiVersion")} value={info.geminiApiVersion} />
                  <Snippet code={s.genaiJs} />
                </Section>
              </SimpleGrid>
              <Section
                icon={<IconTerminal2 size={20} />}
                title={t("connect.geminiCli")}
                hint={t("connect.geminiCliHint")}
              >
                <Snippet code={s.geminiCliEnv} />
                <Group gap="xs">
                  <Badge variant="light">~/.gemini/settings.json</Badge>
                </Group>
                <Snippet code={s.geminiCliSettings} />
              </Section>
              <SimpleGrid cols={{ base: 1, md: 2 }}>
                <Section
                  icon={<IconTerminal2 size={20} />}
                  title={t("connect.claudeCode")}
                  hint={t("connect.claudeCodeHint")}
                >
                  <CopyField label="ANTHROPIC_BASE_URL" value={info.baseUrl} testId="claude-base" />
                  <Snippet code={s.claudeCodeEnv} />
                  <Group gap="xs">
                    <Badge variant="light">~/.claude/settings.json</Badge>
                  </Group>
                  <Snippet code={s.claudeCodeSettings} />
                </Section>
                <Section icon={<IconTerminal2 size={20} />} title={t("connect.codex")} hint={t("connect.codexHint")}>
                  <CopyField label="base_url" value={info.openaiBaseUrl} testId="codex-base" />
                  <Group gap="xs">
                    <Badge variant="light">~/.codex/config.toml</Badge>
                  </Group>
                  <Snippet code={s.codexConfig} />
                  <Snippet code={s.codexEnv} />
                </Section>
              </SimpleGrid>
              <Section
                icon={<IconTerminal2 size={20} />}
                title={t("connect.curl")}
                hint={`${t("connect.model")}: ${pickedModel ?? "—"}`}
              >
                <Snippet code={s.curl} />
              </Section>
            </Stack>
          )
        }}
      </QueryState>
    </>
  )
}

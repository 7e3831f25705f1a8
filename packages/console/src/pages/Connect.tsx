/**
 * "Connect a client": the exact settings for OpenAI-style apps, Gemini
 * clients, gemini-cli, Claude Code and Codex CLI, filled in with this
 * server's address, and with the key the user created last in this tab (the
 * console knows a key's secret only then; otherwise a placeholder).
 *
 * @since 0.1.0
 */
import { Alert, Badge, Card, Group, SimpleGrid, Stack, Text, ThemeIcon, Title } from "@mantine/core"
import { IconBrandGoogle, IconBrandOpenai, IconKey, IconTerminal2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import type { ReactNode } from "react"
import { CopyField, PageHeader, Snippet } from "../components/Bits.tsx"
import { QueryState } from "../components/States.tsx"
import { call, type Contract } from "../lib/api.ts"
import { useI18n } from "../lib/i18n.tsx"
import { useNewKey } from "../lib/newKey.ts"

/** What the snippets show where the user's key goes when the console does not know it. @category snippets */
export const KEY_PLACEHOLDER = "YOUR_MODELGATE_KEY"

/** The snippets of the page, for one server and a key (or the placeholder). @category snippets */
export const snippets = (info: Contract.ConnectInfo, key: string = KEY_PLACEHOLDER) => {
  const model = info.exampleModel ?? "MODEL"
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
export GOOGLE_GEMINI_BASE_URL="${info.geminiBaseUrl}"`,
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
  const newKey = useNewKey()
  return (
    <>
      <PageHeader title={t("connect.title")} subtitle={t("connect.subtitle")} />
      <QueryState query={query}>
        {(info) => {
          const s = snippets(info, newKey?.secret)
          return (
            <Stack gap="lg">
              <Alert variant="light" icon={<IconKey size={18} />} data-testid="connect-key">
                {newKey === undefined
                  ? t("connect.keyPlaceholder", { placeholder: KEY_PLACEHOLDER })
                  : t("connect.keyFilled", { name: newKey.name })}
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
                hint={`${t("connect.model")}: ${info.exampleModel ?? "—"}`}
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

/**
 * "Connect a client": the exact settings for OpenAI-style apps, Gemini
 * clients and gemini-cli, filled in with this server's address.
 *
 * @since 0.1.0
 */
import { Badge, Card, Group, SimpleGrid, Stack, Text, ThemeIcon, Title } from "@mantine/core"
import { IconBrandGoogle, IconBrandOpenai, IconTerminal2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import type { ReactNode } from "react"
import { CopyField, PageHeader, Snippet } from "../components/Bits.tsx"
import { QueryState } from "../components/States.tsx"
import { call, type Contract } from "../lib/api.ts"
import { useI18n } from "../lib/i18n.tsx"

/** The snippets of the page, for one server. @category snippets */
export const snippets = (info: Contract.ConnectInfo) => {
  const model = info.exampleModel ?? "MODEL"
  return {
    openaiPython: `from openai import OpenAI

client = OpenAI(base_url="${info.openaiBaseUrl}", api_key="YOUR_MODELGATE_KEY")
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`,
    genaiJs: `import { GoogleGenAI } from "@google/genai"

const ai = new GoogleGenAI({
  apiKey: "YOUR_MODELGATE_KEY",
  httpOptions: { baseUrl: "${info.geminiBaseUrl}", apiVersion: "${info.geminiApiVersion}" },
})
const reply = await ai.models.generateContent({ model: "${model}", contents: "Hello!" })
console.log(reply.text)`,
    geminiCliEnv: `export GEMINI_API_KEY="YOUR_MODELGATE_KEY"
export GOOGLE_GEMINI_BASE_URL="${info.geminiBaseUrl}"`,
    geminiCliSettings: `{
  "security": {
    "auth": { "selectedType": "gemini-api-key" }
  }
}`,
    curl: `curl ${info.openaiBaseUrl}/chat/completions \\
  -H "Authorization: Bearer YOUR_MODELGATE_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": "${model}", "messages": [{"role": "user", "content": "Hello!"}]}'`
  }
}

function Section({ icon, title, hint, children }: { readonly icon: ReactNode; readonly title: string; readonly hint: string; readonly children: ReactNode }) {
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
  return (
    <>
      <PageHeader title={t("connect.title")} subtitle={t("connect.subtitle")} />
      <QueryState query={query}>
        {(info) => {
          const s = snippets(info)
          return (
            <Stack gap="lg">
              <SimpleGrid cols={{ base: 1, md: 2 }}>
                <Section icon={<IconBrandOpenai size={20} />} title={t("connect.openai")} hint={t("connect.openaiHint", { base: info.openaiBaseUrl })}>
                  <CopyField label={t("connect.baseUrl")} value={info.openaiBaseUrl} testId="openai-base" />
                  <CopyField label={t("connect.openaiNoV1")} value={info.baseUrl} />
                  <Snippet code={s.openaiPython} />
                </Section>
                <Section icon={<IconBrandGoogle size={20} />} title={t("connect.gemini")} hint={t("connect.geminiHint")}>
                  <CopyField label={t("connect.baseUrl")} value={info.geminiBaseUrl} testId="gemini-base" />
                  <CopyField label={t("connect.apiVersion")} value={info.geminiApiVersion} />
                  <Snippet code={s.genaiJs} />
                </Section>
              </SimpleGrid>
              <Section icon={<IconTerminal2 size={20} />} title={t("connect.geminiCli")} hint={t("connect.geminiCliHint")}>
                <Snippet code={s.geminiCliEnv} />
                <Group gap="xs"><Badge variant="light">~/.gemini/settings.json</Badge></Group>
                <Snippet code={s.geminiCliSettings} />
              </Section>
              <Section icon={<IconTerminal2 size={20} />} title={t("connect.curl")} hint={`${t("connect.model")}: ${info.exampleModel ?? "—"}`}>
                <Snippet code={s.curl} />
              </Section>
            </Stack>
          )
        }}
      </QueryState>
    </>
  )
}

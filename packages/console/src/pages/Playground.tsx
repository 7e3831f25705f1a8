/**
 * The playground: chat with a model as one of one's own keys. Each turn is a
 * real call (`POST /api/playground/chat`): the server runs it through the
 * gateway's engine as that key, so it is limited, capped, billed and logged
 * like any call made with the key, and streams the answer back. The browser
 * never holds the key's secret. Under each answer: its tokens, cost, latency
 * and time to first byte, as the request log recorded them.
 *
 * @since 0.1.0
 */
import {
  Alert,
  Badge,
  Button,
  Card,
  Grid,
  Group,
  NumberInput,
  Paper,
  ScrollArea,
  Select,
  Stack,
  Text,
  Textarea
} from "@mantine/core"
import { IconAlertTriangle, IconPlayerStop, IconSend, IconTrash } from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { useEffect, useMemo, useRef, useState } from "react"
import { PageHeader } from "../components/Bits.tsx"
import { QueryState } from "../components/States.tsx"
import { Usd } from "../components/Usd.tsx"
import { call, type Contract, currentCsrfToken } from "../lib/api.ts"
import { tokens } from "../lib/format.ts"
import { useI18n } from "../lib/i18n.tsx"
import { sessionKey } from "../lib/session.tsx"

/** One turn of the conversation as shown. @category models */
interface Turn {
  readonly role: "user" | "assistant"
  readonly content: string
  readonly error?: string | undefined
  readonly requestId?: string | undefined
  /** The request log's record of the call, once written. */
  readonly record?: Contract.UsageItem | undefined
  /** Measured here while the record is not yet there. */
  readonly ttfbMs?: number | undefined
  readonly latencyMs?: number | undefined
  readonly streaming?: boolean | undefined
  /** Stopped by the user (what came until then is kept, and billed). */
  readonly stopped?: boolean | undefined
}

/** The models a key may use: its own list, within what its group reaches. @category models */
export const modelsOfKey = (key: Contract.ApiKey, models: Contract.MyModels): ReadonlyArray<string> => {
  const group = models.groups.find((g) => g.name === key.group)
  const reached = group?.models.map((m) => m.id) ?? []
  if (key.models.length === 0) return reached
  return group === undefined ? key.models : key.models.filter((m) => reached.includes(m))
}

/**
 * Reads an OpenAI chat completion stream (server-sent events), calling
 * `onText` with each piece of the answer; resolves when the stream ends.
 *
 * @category streams
 */
export const readChatStream = async (
  body: ReadableStream<Uint8Array>,
  onText: (text: string) => void,
  onFirstByte: () => void
): Promise<void> => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let first = true
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (first) {
      first = false
      onFirstByte()
    }
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "")
      for (const line of event.split(/\r?\n/)) {
        if (!line.startsWith("data:")) continue
        const data = line.slice(5).trim()
        if (data === "[DONE]" || data.length === 0) continue
        const chunk = JSON.parse(data) as {
          readonly choices?: ReadonlyArray<{ readonly delta?: { readonly content?: string | null } }>
          readonly error?: { readonly message?: string }
        }
        if (chunk.error?.message !== undefined) throw new Error(chunk.error.message)
        const text = chunk.choices?.[0]?.delta?.content
        if (typeof text === "string" && text.length > 0) onText(text)
      }
    }
  }
}

/** Waits for the request log's record of a call (written in batches, within a second or so). */
const recordOf = async (requestId: string): Promise<Contract.UsageItem | undefined> => {
  for (let attempt = 0; attempt < 20; attempt++) {
    const page = await call((api) => api.usage.list({ query: { requestId, limit: 1 } }))
    if (page.data[0] !== undefined) return page.data[0]
    await new Promise((r) => setTimeout(r, 250))
  }
  return undefined
}

function TurnView({ turn }: { readonly turn: Turn }) {
  const { t } = useI18n()
  const mine = turn.role === "user"
  const record = turn.record
  return (
    <Paper
      withBorder
      p="sm"
      radius="md"
      {...(mine ? { bg: "var(--mantine-color-indigo-light)" } : {})}
      data-testid={mine ? "turn-user" : "turn-assistant"}
      style={mine ? { alignSelf: "flex-end", maxWidth: "85%" } : { alignSelf: "stretch" }}
    >
      {(turn.content.length > 0 || turn.error === undefined) && (
        <Text style={{ whiteSpace: "pre-wrap" }} data-testid="turn-text">{turn.content}</Text>
      )}
      {turn.error !== undefined && (
        <Alert
          color={turn.stopped === true ? "gray" : "red"}
          variant="light"
          icon={<IconAlertTriangle />}
          role="alert"
          mt={turn.content.length > 0 ? "xs" : 0}
          data-testid="turn-error"
        >
          {turn.error}
        </Alert>
      )}
      {!mine && !turn.streaming && turn.requestId !== undefined && (
        <Group gap={6} mt="xs" data-testid="turn-stats">
          {record !== undefined && (
            <>
              <Badge variant="light" color="gray" data-testid="turn-tokens">
                {t("playground.tokens", {
                  prompt: tokens(record.promptTokens),
                  completion: tokens(record.completionTokens)
                })}
              </Badge>
              <Badge variant="light" color="teal" data-testid="turn-cost">
                <Group gap={4} wrap="nowrap">
                  {t("playground.cost", { cost: "" })}
                  <Usd amount={record.cost} />
                </Group>
              </Badge>
            </>
          )}
          <Badge variant="light" color="gray" data-testid="turn-latency">
            {t("playground.latency", { ms: String(record?.latencyMs ?? turn.latencyMs ?? "…") })}
          </Badge>
          <Badge variant="light" color="gray" data-testid="turn-ttfb">
            {t("playground.ttfb", { ms: String(record?.ttfbMs ?? turn.ttfbMs ?? "…") })}
          </Badge>
          <Text size="xs" c="dimmed" ff="monospace" data-testid="turn-request-id">
            {t("playground.requestId", { id: turn.requestId })}
          </Text>
        </Group>
      )}
    </Paper>
  )
}

/** The playground page. @category pages */
export function PlaygroundPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => call((api) => api.keys.list()) })
  const models = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  const [keyId, setKeyId] = useState<string | null>(null)
  const [model, setModel] = useState<string | null>(null)
  const [system, setSystem] = useState("")
  const [temperature, setTemperature] = useState<number | string>("")
  const [maxTokens, setMaxTokens] = useState<number | string>("")
  const [topP, setTopP] = useState<number | string>("")
  const [message, setMessage] = useState("")
  const [turns, setTurns] = useState<ReadonlyArray<Turn>>([])
  const [busy, setBusy] = useState(false)
  const abort = useRef<AbortController | null>(null)

  const usable = useMemo(() => (keys.data?.data ?? []).filter((k) => k.enabled), [keys.data])
  const key = usable.find((k) => k.id === keyId)
  const allowed = useMemo(
    () => key !== undefined && models.data !== undefined ? modelsOfKey(key, models.data) : [],
    [key, models.data]
  )
  useEffect(() => {
    if (keyId === null && usable[0] !== undefined) setKeyId(usable[0].id)
  }, [keyId, usable])
  useEffect(() => {
    if (model === null || !allowed.includes(model)) setModel(allowed[0] ?? null)
  }, [allowed, model])

  const update = (index: number, change: (turn: Turn) => Turn) =>
    setTurns((all) => all.map((turn, i) => i === index ? change(turn) : turn))

  const send = async () => {
    const text = message.trim()
    if (text.length === 0 || key === undefined || model === null || busy) return
    const history = [...turns.filter((x) => x.error === undefined), { role: "user" as const, content: text }]
    const index = turns.length + 1
    setTurns([...turns, { role: "user", content: text }, { role: "assistant", content: "", streaming: true }])
    setMessage("")
    setBusy(true)
    const controller = new AbortController()
    abort.current = controller
    const started = performance.now()
    let requestId: string | undefined
    try {
      const response = await fetch("/api/playground/chat", {
        method: "POST",
        credentials: "same-origin",
        signal: controller.signal,
        headers: { "content-type": "application/json", "x-csrf-token": currentCsrfToken() ?? "" },
        body: JSON.stringify({
          keyId: key.id,
          model,
          ...(system.trim().length > 0 ? { system } : {}),
          messages: history.map((x) => ({ role: x.role, content: x.content })),
          ...(typeof temperature === "number" ? { temperature } : {}),
          ...(typeof maxTokens === "number" ? { maxTokens } : {}),
          ...(typeof topP === "number" ? { topP } : {})
        })
      })
      requestId = response.headers.get("x-request-id") ?? undefined
      const contentType = response.headers.get("content-type") ?? ""
      if (!response.ok || !contentType.includes("text/event-stream") || response.body === null) {
        const body = await response.json().catch(() => undefined) as
          | { readonly error?: { readonly message?: string } }
          | undefined
        throw new Error(body?.error?.message ?? `HTTP ${response.status}`)
      }
      await readChatStream(
        response.body,
        (piece) => update(index, (turn) => ({ ...turn, content: turn.content + piece })),
        () => update(index, (turn) => ({ ...turn, ttfbMs: Math.round(performance.now() - started) }))
      )
      update(index, (turn) => ({
        ...turn,
        streaming: false,
        requestId,
        latencyMs: Math.round(performance.now() - started)
      }))
    } catch (error) {
      const stopped = controller.signal.aborted
      const reason = stopped ? t("playground.stopped") : (error as Error).message
      update(index, (turn) => ({ ...turn, streaming: false, requestId, error: reason, stopped }))
    } finally {
      setBusy(false)
      abort.current = null
    }
    if (requestId !== undefined) {
      const id = requestId
      const record = await recordOf(id).catch(() => undefined)
      if (record !== undefined) update(index, (turn) => ({ ...turn, record }))
      // The call spent from the balance the header shows.
      void client.invalidateQueries({ queryKey: sessionKey })
    }
  }

  return (
    <>
      <PageHeader title={t("playground.title")} subtitle={t("playground.subtitle")} />
      <QueryState query={keys}>
        {() =>
          usable.length === 0
            ? <Alert color="yellow" variant="light">{t("playground.noKeys")}</Alert>
            : (
              <Grid>
                <Grid.Col span={{ base: 12, md: 4 }}>
                  <Card withBorder radius="md">
                    <Stack>
                      <Select
                        label={t("playground.key")}
                        data={usable.map((k) => ({ value: k.id, label: `${k.name} (${k.prefix}…)` }))}
                        value={keyId}
                        onChange={setKeyId}
                        allowDeselect={false}
                        data-testid="playground-key"
                      />
                      <Select
                        label={t("playground.model")}
                        data={[...allowed]}
                        value={model}
                        onChange={setModel}
                        allowDeselect={false}
                        searchable
                        error={key !== undefined && models.data !== undefined && allowed.length === 0
                          ? t("playground.noModels")
                          : undefined}
                        data-testid="playground-model"
                      />
                      <Textarea
                        label={t("playground.system")}
                        autosize
                        minRows={2}
                        maxRows={8}
                        value={system}
                        onChange={(e) => setSystem(e.currentTarget.value)}
                      />
                      <NumberInput
                        label={t("playground.temperature")}
                        min={0}
                        max={2}
                        step={0.1}
                        decimalScale={2}
                        value={temperature}
                        onChange={setTemperature}
                      />
                      <NumberInput
                        label={t("playground.maxTokens")}
                        min={1}
                        max={1_000_000}
                        allowDecimal={false}
                        value={maxTokens}
                        onChange={setMaxTokens}
                      />
                      <NumberInput
                        label={t("playground.topP")}
                        min={0}
                        max={1}
                        step={0.05}
                        decimalScale={2}
                        value={topP}
                        onChange={setTopP}
                      />
                    </Stack>
                  </Card>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 8 }}>
                  <Card withBorder radius="md">
                    <Stack>
                      <ScrollArea.Autosize mah="60vh">
                        <Stack gap="sm" data-testid="playground-turns">
                          {turns.length === 0
                            ? <Text c="dimmed" size="sm">{t("playground.empty")}</Text>
                            : turns.map((turn, i) => <TurnView key={i} turn={turn} />)}
                        </Stack>
                      </ScrollArea.Autosize>
                      <Textarea
                        label={t("playground.message")}
                        autosize
                        minRows={2}
                        maxRows={10}
                        value={message}
                        onChange={(e) => setMessage(e.currentTarget.value)}
                        onKeyDown={(e) => {
                          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void send()
                        }}
                      />
                      <Group justify="space-between">
                        <Button
                          variant="subtle"
                          color="gray"
                          leftSection={<IconTrash size={16} />}
                          onClick={() => setTurns([])}
                          disabled={busy}
                        >
                          {t("playground.clear")}
                        </Button>
                        {busy
                          ? (
                            <Button
                              color="red"
                              leftSection={<IconPlayerStop size={16} />}
                              onClick={() => abort.current?.abort()}
                            >
                              {t("playground.stop")}
                            </Button>
                          )
                          : (
                            <Button
                              leftSection={<IconSend size={16} />}
                              onClick={() => void send()}
                              disabled={message.trim().length === 0 || key === undefined || model === null}
                            >
                              {t("playground.send")}
                            </Button>
                          )}
                      </Group>
                    </Stack>
                  </Card>
                </Grid.Col>
              </Grid>
            )}
      </QueryState>
    </>
  )
}

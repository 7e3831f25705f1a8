/**
 * Administration of channels: upstream accounts with write-only keys, the
 * health of each key (healthy, breaker open or half-open, disabled after the
 * upstream refused it: why and since when), routing settings (timeouts,
 * breaker, extra headers, request parameters, `stream_options`), Fetch models
 * (the upstream's own list, to pick the channel's models from), the Test
 * button that sends one real request through each key and updates its
 * health, and Reset.
 *
 * @since 0.1.0
 */
import {
  Accordion,
  Alert,
  Badge,
  Button,
  Checkbox,
  FileButton,
  Group,
  Menu,
  Modal,
  MultiSelect,
  NumberInput,
  Paper,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  TagsInput,
  Text,
  Textarea,
  TextInput,
  Tooltip
} from "@mantine/core"
import { useMediaQuery } from "@mantine/hooks"
import { notifications } from "@mantine/notifications"
import {
  IconChevronDown,
  IconCloudDownload,
  IconPlayerPlay,
  IconPlus,
  IconRefresh,
  IconServer
} from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, useMemo, useState } from "react"
import { ConfirmButton, PageHeader } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, QueryState } from "../../components/States.tsx"
import { WideTable } from "../../components/WideTable.tsx"
import { call, type Contract } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { ago } from "../../lib/format.ts"
import { type MessageKey, useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"
import { BASE_HINT, cloudBaseUrl, isCloud, VENDORS, versionedAddress } from "../../lib/vendors.ts"

/** Parses `public=upstream` lines into a model map. @category forms */
export const parseModelMap = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split("\n").map((line) => line.trim()).filter((line) => line.includes("=")).map((line) => {
      const at = line.indexOf("=")
      return [line.slice(0, at).trim(), line.slice(at + 1).trim()]
    })
  )

/** Parses `Name: value` lines into headers. @category forms */
export const parseHeaders = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split("\n").map((line) => line.trim()).filter((line) => line.includes(":")).map((line) => {
      const at = line.indexOf(":")
      return [line.slice(0, at).trim(), line.slice(at + 1).trim()]
    })
  )

/** A JSON object typed into a text area (empty: `{}`); anything else is passed on for the Schema to refuse. */
const parseObject = (text: string): unknown => {
  if (text.trim() === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Parses `model=google|anthropic` lines into Vertex AI publishers (anything else: undefined). */
const parsePublishers = (text: string): Record<string, "google" | "anthropic"> | undefined => {
  const lines = text.split("\n").map((line) => line.trim()).filter((line) => line.length > 0)
  const map: Record<string, "google" | "anthropic"> = {}
  for (const line of lines) {
    const at = line.indexOf("=")
    const publisher = at < 0 ? "" : line.slice(at + 1).trim()
    if (at <= 0 || (publisher !== "google" && publisher !== "anthropic")) return undefined
    map[line.slice(0, at).trim()] = publisher
  }
  return map
}

/**
 * The credentials typed into a cloud channel's fields, as the admin API takes
 * them in `apiKeys`: a Vertex AI key file's JSON, a Bedrock API key, or an
 * access key pair as `{"access_key_id", "secret_access_key", "session_token"}`.
 * Empty when nothing was typed (an edit keeps the saved credentials).
 *
 * @category forms
 */
export const cloudKeys = (v: {
  readonly type: Contract.ChannelType
  readonly serviceAccount: string
  readonly bedrockAuth: "keys" | "apiKey"
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken: string
  readonly bedrockApiKey: string
}): Array<string> => {
  if (v.type === "vertex") return v.serviceAccount.trim() === "" ? [] : [v.serviceAccount.trim()]
  if (v.bedrockAuth === "apiKey") return v.bedrockApiKey.trim() === "" ? [] : [v.bedrockApiKey.trim()]
  const id = v.accessKeyId.trim()
  const secret = v.secretAccessKey.trim()
  const token = v.sessionToken.trim()
  if (id === "" && secret === "" && token === "") return []
  return [
    JSON.stringify({
      access_key_id: id,
      secret_access_key: secret,
      ...(token === "" ? {} : { session_token: token })
    })
  ]
}

const TIMEOUTS = ["connectMs", "firstByteMs", "idleMs", "totalMs"] as const
const BREAKER = [
  "consecutiveFailures",
  "failureRate",
  "minimumCalls",
  "windowMs",
  "cooldownMs",
  "halfOpenCalls"
] as const

interface ChannelValues extends Record<string, unknown> {
  name: string
  type: Contract.ChannelType
  baseUrl: string
  apiKeys: string
  /** Vertex AI: the project, the location, the publishers (`model=google|anthropic` lines), the key file. */
  project: string
  location: string
  publishers: string
  serviceAccount: string
  /** AWS Bedrock: the region and one kind of credentials. */
  region: string
  bedrockAuth: "keys" | "apiKey"
  accessKeyId: string
  secretAccessKey: string
  sessionToken: string
  bedrockApiKey: string
  models: Array<string>
  modelMap: string
  groups: Array<string>
  priority: number | string
  weight: number | string
  enabled: boolean
  apiVersion: string
  headers: string
  timeouts: Record<(typeof TIMEOUTS)[number], number | string>
  breaker: Record<(typeof BREAKER)[number], number | string>
  paramDefaults: string
  paramOverrides: string
  streamOptions: boolean
  responses: boolean
}

/**
 * The upstream's own models, to pick from: each with what the gateway knows
 * of it (already in the channel, priced, in the shipped price table, an
 * embedding model); `onPick` gets the ids picked.
 *
 * @category components
 */
export function ModelPicker({ request, current, onPick, onClose }: {
  /** What to list (a saved channel's id, or a channel being made), or undefined when closed. */
  readonly request: Contract.FetchModelsRequest | undefined
  readonly current: ReadonlyArray<string>
  readonly onPick: (ids: ReadonlyArray<string>) => void
  readonly onClose: () => void
}) {
  const { t } = useI18n()
  const [filter, setFilter] = useState("")
  const [picked, setPicked] = useState<ReadonlySet<string>>(new Set())
  const listed = useQuery({
    queryKey: ["admin", "upstream-models", request],
    queryFn: () => call((api) => api.catalog.fetchModels({ payload: request! })),
    enabled: request !== undefined,
    retry: false,
    staleTime: 30_000
  })
  // Read here, not inside a child, so the query re-renders this component on each of them.
  const { data, error, isPending, refetch } = listed
  const shown = useMemo(
    () => (data?.data ?? []).filter((m) => m.id.toLowerCase().includes(filter.trim().toLowerCase())),
    [data, filter]
  )
  const toggle = (id: string, on: boolean) => {
    const next = new Set(picked)
    if (on) next.add(id)
    else next.delete(id)
    setPicked(next)
  }
  const close = () => {
    setPicked(new Set())
    setFilter("")
    onClose()
  }
  return (
    <Modal
      opened={request !== undefined}
      onClose={close}
      title={<Text fw={700}>{t("admin.channels.fetchTitle")}</Text>}
      centered
      size="lg"
    >
      <Stack data-testid="model-picker">
        <Text size="sm" c="dimmed">{t("admin.channels.fetchHint")}</Text>
        <QueryState query={{ data, error, isPending, refetch }}>
          {(data) =>
            data.data.length === 0
              ? <EmptyState title={t("admin.channels.fetchNone")} />
              : (
                <Stack gap="xs">
                  <Group justify="space-between" wrap="wrap">
                    <TextInput
                      placeholder={t("admin.channels.fetchFilter")}
                      value={filter}
                      onChange={(e) => setFilter(e.currentTarget.value)}
                      w={260}
                    />
                    <Button
                      variant="subtle"
                      size="xs"
                      onClick={() =>
                        setPicked(
                          new Set([...picked, ...shown.filter((m) => !current.includes(m.id)).map((m) => m.id)])
                        )}
                    >
                      {t("admin.channels.fetchAllShown")}
                    </Button>
                  </Group>
                  <Stack gap={4} mah={380} style={{ overflowY: "auto" }}>
                    {shown.map((m) => {
                      const inChannel = current.includes(m.id)
                      return (
                        <Group key={m.id} justify="space-between" wrap="nowrap" gap="xs" data-upstream-model={m.id}>
                          <Checkbox
                            label={<Text size="sm" ff="monospace">{m.id}</Text>}
                            aria-label={m.id}
                            checked={inChannel || picked.has(m.id)}
                            disabled={inChannel}
                            onChange={(e) =>
                              toggle(m.id, e.currentTarget.checked)}
                          />
                          <Group gap={4} wrap="nowrap">
                            {m.embedding && (
                              <Badge size="xs" variant="light" color="grape">
                                {t("admin.channels.fetchEmbedding")}
                              </Badge>
                            )}
                            {inChannel
                              ? (
                                <Badge size="xs" variant="outline" color="gray">
                                  {t("admin.channels.fetchInChannel")}
                                </Badge>
                              )
                              : m.priced
                              ? <Badge size="xs" variant="light" color="teal">{t("admin.channels.fetchPriced")}</Badge>
                              : m.preset
                              ? <Badge size="xs" variant="light" color="blue">{t("admin.channels.fetchPreset")}</Badge>
                              : (
                                <Badge size="xs" variant="light" color="orange">
                                  {t("admin.channels.fetchUnpriced")}
                                </Badge>
                              )}
                          </Group>
                        </Group>
                      )
                    })}
                  </Stack>
                </Stack>
              )}
        </QueryState>
        <Group justify="flex-end">
          <Button
            disabled={picked.size === 0}
            onClick={() => {
              onPick([...picked])
              close()
            }}
          >
            {t("admin.channels.fetchAdd", { count: picked.size })}
          </Button>
        </Group>
      </Stack>
    </Modal>
  )
}

/** The create/edit channel form. @category components */
export function ChannelForm({ channel, groups, onDone }: {
  readonly channel: Contract.AdminChannel | undefined
  readonly groups: ReadonlyArray<string>
  readonly onDone: () => void
}) {
  const { t } = useI18n()
  const initial: ChannelValues = {
    name: channel?.name ?? "",
    type: channel?.type ?? "openai",
    baseUrl: channel?.baseUrl ?? "",
    apiKeys: "",
    project: channel?.project ?? "",
    location: channel?.location ?? "",
    publishers: Object.entries(channel?.publishers ?? {}).map(([k, v]) => `${k}=${v}`).join("\n"),
    serviceAccount: "",
    region: channel?.region ?? "",
    bedrockAuth: "keys",
    accessKeyId: "",
    secretAccessKey: "",
    sessionToken: "",
    bedrockApiKey: "",
    models: [...(channel?.models ?? [])],
    modelMap: Object.entries(channel?.modelMap ?? {}).map(([k, v]) => `${k}=${v}`).join("\n"),
    groups: [...(channel?.groups ?? ["default"])],
    priority: channel?.priority ?? 0,
    weight: channel?.weight ?? 1,
    enabled: channel?.enabled ?? true,
    apiVersion: channel?.apiVersion ?? "",
    headers: Object.entries(channel?.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join("\n"),
    timeouts: {
      connectMs: channel?.timeouts.connectMs ?? "",
      firstByteMs: channel?.timeouts.firstByteMs ?? "",
      idleMs: channel?.timeouts.idleMs ?? "",
      totalMs: channel?.timeouts.totalMs ?? ""
    },
    breaker: {
      consecutiveFailures: channel?.breaker.consecutiveFailures ?? "",
      failureRate: channel?.breaker.failureRate ?? "",
      minimumCalls: channel?.breaker.minimumCalls ?? "",
      windowMs: channel?.breaker.windowMs ?? "",
      cooldownMs: channel?.breaker.cooldownMs ?? "",
      halfOpenCalls: channel?.breaker.halfOpenCalls ?? ""
    },
    paramDefaults: channel === undefined || Object.keys(channel.params.defaults).length === 0
      ? ""
      : JSON.stringify(channel.params.defaults, null, 2),
    paramOverrides: channel === undefined || Object.keys(channel.params.overrides).length === 0
      ? ""
      : JSON.stringify(channel.params.overrides, null, 2),
    streamOptions: channel?.streamOptions ?? true,
    responses: channel?.responses ?? false
  }
  /** The numbers typed in (empty fields: unchanged, or the default for a new channel). */
  const numbers = <K extends string>(values: Record<K, number | string>) =>
    Object.fromEntries(Object.entries(values).filter(([, v]) => v !== "").map(([k, v]) => [k, Number(v)]))
  const toRequest = (v: ChannelValues) => {
    const cloud = isCloud(v.type)
    const keys = cloud ? cloudKeys(v) : v.apiKeys.split("\n").map((k) => k.trim()).filter((k) => k.length > 0)
    return {
      name: v.name.trim(),
      type: v.type,
      // The version the gateway adds itself (Gemini's /v1beta, Anthropic's /v1) is left off;
      // a cloud channel's address is optional (its location's or region's endpoint).
      ...(cloud && v.baseUrl.trim() === ""
        ? {}
        : { baseUrl: versionedAddress(v.type, v.baseUrl)?.fixed ?? v.baseUrl.trim() }),
      ...(v.type === "vertex"
        ? {
          project: v.project.trim(),
          location: v.location.trim(),
          ...(v.publishers.trim() === "" ? {} : { publishers: parsePublishers(v.publishers) ?? v.publishers })
        }
        : {}),
      ...(v.type === "bedrock" ? { region: v.region.trim() } : {}),
      models: v.models,
      modelMap: parseModelMap(v.modelMap),
      groups: v.groups,
      priority: Number(v.priority),
      weight: Number(v.weight),
      enabled: v.enabled,
      ...(v.apiVersion.trim() !== "" ? { apiVersion: v.apiVersion.trim() } : {}),
      headers: parseHeaders(v.headers),
      timeouts: numbers(v.timeouts),
      breaker: numbers(v.breaker),
      params: { defaults: parseObject(v.paramDefaults), overrides: parseObject(v.paramOverrides) },
      streamOptions: v.streamOptions,
      // Only an OpenAI channel relays Responses calls; changing the type turns the switch off.
      responses: v.type === "openai" && v.responses,
      ...(channel === undefined || keys.length > 0 ? { apiKeys: keys } : {})
    }
  }
  // Problems are reported per group (the Schema's top-level field); the message names the setting.
  const groupError = (name: string) =>
    form.errors[name] === undefined ? null : <Text size="xs" c="red">{form.errors[name]}</Text>
  /** What the Schema cannot say about a cloud channel's fields, each next to its field. */
  const check = (v: ChannelValues): Record<string, string> => {
    const errors: Record<string, string> = {}
    // Credentials are needed for a new channel, or for one changing its type; else empty keeps them.
    const needKeys = channel === undefined || channel.type !== v.type
    if (v.type === "vertex") {
      if (v.project.trim() === "") errors["project"] = t("admin.channels.need.project")
      if (v.location.trim() === "") errors["location"] = t("admin.channels.need.location")
      if (v.publishers.trim() !== "" && parsePublishers(v.publishers) === undefined) {
        errors["publishers"] = t("admin.channels.bad.publishers")
      }
      const text = v.serviceAccount.trim()
      if (text === "") {
        if (needKeys) errors["serviceAccount"] = t("admin.channels.need.serviceAccount")
      } else {
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        if (typeof json !== "object" || json === null || Array.isArray(json)) {
          errors["serviceAccount"] = t("admin.channels.bad.serviceAccountJson")
        } else {
          const file = json as Record<string, unknown>
          if (
            typeof file["client_email"] !== "string" || typeof file["private_key"] !== "string" ||
            !file["private_key"].includes("-----BEGIN PRIVATE KEY-----")
          ) errors["serviceAccount"] = t("admin.channels.bad.serviceAccountFields")
        }
      }
    }
    if (v.type === "bedrock") {
      if (v.region.trim() === "") errors["region"] = t("admin.channels.need.region")
      if (v.bedrockAuth === "apiKey") {
        if (v.bedrockApiKey.trim() === "" && needKeys) errors["bedrockApiKey"] = t("admin.channels.need.bedrockApiKey")
      } else {
        const id = v.accessKeyId.trim()
        const secret = v.secretAccessKey.trim()
        const any = id !== "" || secret !== "" || v.sessionToken.trim() !== ""
        if (any || needKeys) {
          if (id === "") errors["accessKeyId"] = t("admin.channels.need.accessKeyId")
          else if (!/^[A-Z0-9]{16,128}$/.test(id)) errors["accessKeyId"] = t("admin.channels.bad.accessKeyId")
          if (secret === "") errors["secretAccessKey"] = t("admin.channels.need.secretAccessKey")
        }
      }
    }
    return errors
  }
  const form = useForm({
    initial,
    schema: channel === undefined ? C.CreateChannelRequest : C.UpdateChannelRequest,
    toRequest,
    check,
    onSubmit: async (body) => {
      if (channel === undefined) {
        await call((api) => api.catalog.createChannel({ payload: body as Contract.CreateChannelRequest }))
      } else await call((api) => api.catalog.updateChannel({ params: { id: channel.id }, payload: body }))
      onDone()
    }
  })
  const [listing, setListing] = useState<Contract.FetchModelsRequest | undefined>(undefined)
  const cloud = isCloud(form.values.type)
  const firstKey = cloud
    ? cloudKeys(form.values)[0]
    : form.values.apiKeys.split("\n").map((k) => k.trim()).find((k) => k.length > 0)
  const versioned = versionedAddress(form.values.type, form.values.baseUrl)
  const baseUrl = versioned?.fixed ?? form.values.baseUrl.trim()
  /** Where a cloud channel is served when its address is left empty. */
  const cloudBase = cloudBaseUrl(
    form.values.type,
    form.values.type === "vertex" ? form.values.location : form.values.region
  )
  const [vendor, setVendor] = useState<string | null>(null)
  const vendorNote = VENDORS.find((v) => v.id === vendor)?.note
  const pickVendor = (id: string | null) => {
    const picked = VENDORS.find((v) => v.id === id)
    if (picked === undefined) return
    setVendor(picked.id)
    form.set("type", picked.type)
    // A cloud channel's address follows its location or region: left empty.
    form.set("baseUrl", isCloud(picked.type) ? "" : picked.baseUrl)
    form.set("streamOptions", picked.streamOptions)
    form.set("paramOverrides", picked.overrides === undefined ? "" : JSON.stringify(picked.overrides, null, 2))
    if (form.values.name.trim() === "") form.set("name", picked.id)
  }
  const canList = (/^https?:\/\/\S+$/.test(baseUrl) || (cloud && baseUrl === "" && cloudBase !== undefined)) &&
    (channel !== undefined || firstKey !== undefined)
  const fetchModels = () =>
    setListing({
      ...(channel === undefined ? {} : { channelId: channel.id }),
      type: form.values.type,
      ...(baseUrl === "" ? {} : { baseUrl }),
      ...(form.values.type === "vertex"
        ? { project: form.values.project.trim(), location: form.values.location.trim() }
        : form.values.type === "bedrock"
        ? { region: form.values.region.trim() }
        : {}),
      ...(firstKey === undefined ? {} : { apiKey: firstKey }),
      ...(form.values.apiVersion.trim() === "" ? {} : { apiVersion: form.values.apiVersion.trim() }),
      headers: parseHeaders(form.values.headers)
    })
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        {channel === undefined && (
          <Select
            label={t("admin.channels.vendor")}
            description={vendorNote ?? t("admin.channels.vendorHint")}
            placeholder={t("admin.channels.vendorPick")}
            searchable
            data={VENDORS.map((v) => ({ value: v.id, label: v.label }))}
            value={vendor}
            onChange={pickVendor}
            data-testid="vendor"
          />
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("common.name")} data-autofocus {...form.field("name")} />
          <Select
            label={t("admin.channels.type")}
            allowDeselect={false}
            data={["openai", "gemini", "anthropic", "azure", "vertex", "bedrock"]}
            value={form.values.type}
            error={form.errors.type}
            onChange={(v) => form.set("type", (v ?? "openai") as Contract.ChannelType)}
          />
        </SimpleGrid>
        <TextInput
          label={t("admin.channels.baseUrl")}
          placeholder={cloudBase ?? BASE_HINT[form.values.type]}
          description={t(`admin.channels.baseHint.${form.values.type}` as MessageKey, {
            hint: cloudBase ?? BASE_HINT[form.values.type]
          })}
          {...form.field("baseUrl")}
        />
        {versioned !== undefined && (
          <Alert color="yellow" variant="light" p="xs" data-testid="base-url-warning">
            <Text size="xs">
              {t("admin.channels.baseVersioned", { suffix: versioned.suffix, fixed: versioned.fixed })}
            </Text>
          </Alert>
        )}
        {form.values.type === "vertex" && (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput label={t("admin.channels.project")} placeholder="my-project" {...form.field("project")} />
              <TextInput
                label={t("admin.channels.location")}
                description={t("admin.channels.locationHint")}
                placeholder="us-east5"
                {...form.field("location")}
              />
            </SimpleGrid>
            <Textarea
              label={t("admin.channels.serviceAccount")}
              description={channel !== undefined && channel.type === "vertex"
                ? t("admin.channels.credentialsKeep")
                : t("admin.channels.serviceAccountHint")}
              autosize
              minRows={3}
              maxRows={10}
              ff="monospace"
              autoComplete="off"
              placeholder={"{\"type\": \"service_account\", \"client_email\": \"…\", \"private_key\": \"…\"}"}
              {...form.field("serviceAccount")}
              error={form.errors["serviceAccount"] ?? form.errors.apiKeys}
            />
            <Group>
              <FileButton
                accept="application/json,.json"
                onChange={(file) => {
                  if (file !== null) void file.text().then((text) => form.set("serviceAccount", text))
                }}
              >
                {(props) => (
                  <Button variant="light" size="xs" {...props}>{t("admin.channels.serviceAccountFile")}</Button>
                )}
              </FileButton>
            </Group>
            <Textarea
              label={t("admin.channels.publishers")}
              description={t("admin.channels.publishersHint")}
              autosize
              minRows={1}
              ff="monospace"
              placeholder="my-tuned-model=anthropic"
              {...form.field("publishers")}
            />
          </>
        )}
        {form.values.type === "bedrock" && (
          <>
            <TextInput
              label={t("admin.channels.region")}
              description={t("admin.channels.regionHint")}
              placeholder="us-east-1"
              {...form.field("region")}
            />
            <Stack gap={4}>
              <Text size="sm" fw={500}>{t("admin.channels.bedrockAuth")}</Text>
              <SegmentedControl
                aria-label={t("admin.channels.bedrockAuth")}
                value={form.values.bedrockAuth}
                onChange={(v) => form.set("bedrockAuth", v === "apiKey" ? "apiKey" : "keys")}
                data={[
                  { value: "keys", label: t("admin.channels.bedrockAuth.keys") },
                  { value: "apiKey", label: t("admin.channels.bedrockAuth.apiKey") }
                ]}
              />
              {channel !== undefined && channel.type === "bedrock" && (
                <Text size="xs" c="dimmed">{t("admin.channels.credentialsKeep")}</Text>
              )}
            </Stack>
            {form.values.bedrockAuth === "keys"
              ? (
                <>
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    <TextInput
                      label={t("admin.channels.accessKeyId")}
                      placeholder="AKIA…"
                      ff="monospace"
                      autoComplete="off"
                      {...form.field("accessKeyId")}
                      error={form.errors["accessKeyId"] ?? form.errors.apiKeys}
                    />
                    <TextInput
                      label={t("admin.channels.secretAccessKey")}
                      type="password"
                      autoComplete="off"
                      {...form.field("secretAccessKey")}
                    />
                  </SimpleGrid>
                  <TextInput
                    label={t("admin.channels.sessionToken")}
                    type="password"
                    autoComplete="off"
                    {...form.field("sessionToken")}
                  />
                </>
              )
              : (
                <TextInput
                  label={t("admin.channels.bedrockApiKey")}
                  type="password"
                  autoComplete="off"
                  {...form.field("bedrockApiKey")}
                  error={form.errors["bedrockApiKey"] ?? form.errors.apiKeys}
                />
              )}
          </>
        )}
        {!cloud && (
          <Textarea
            label={t("admin.channels.apiKeys")}
            description={channel !== undefined
              ? t("admin.channels.apiKeysKeep", { count: channel.keyCount })
              : undefined}
            autosize
            minRows={2}
            ff="monospace"
            autoComplete="off"
            {...form.field("apiKeys")}
            error={form.errors.apiKeys}
          />
        )}
        <Group align="flex-end" gap="xs" wrap="nowrap">
          <TagsInput
            label={t("admin.channels.models")}
            value={form.values.models}
            error={form.errors.models}
            onChange={(v) => form.set("models", v)}
            style={{ flex: 1 }}
          />
          <Tooltip label={t("admin.channels.fetchNeeds")} disabled={canList}>
            <Button
              variant="light"
              leftSection={<IconCloudDownload size={16} />}
              disabled={!canList}
              onClick={fetchModels}
            >
              {t("admin.channels.fetchModels")}
            </Button>
          </Tooltip>
        </Group>
        <ModelPicker
          request={listing}
          current={form.values.models}
          onClose={() => setListing(undefined)}
          onPick={(ids) => {
            form.set("models", [...new Set([...form.values.models, ...ids])])
            notifications.show({ color: "teal", message: t("admin.channels.fetchAdded", { count: ids.length }) })
          }}
        />
        <Textarea
          label={t("admin.channels.modelMap")}
          autosize
          minRows={1}
          ff="monospace"
          placeholder="gpt-4o=gpt-4o-2024-08-06"
          {...form.field("modelMap")}
        />
        <MultiSelect
          label={t("admin.channels.groups")}
          data={[...new Set([...groups, ...form.values.groups])]}
          value={form.values.groups}
          onChange={(v) => form.set("groups", v)}
        />
        <SimpleGrid cols={{ base: 2, sm: 3 }}>
          <NumberInput
            label={t("admin.channels.priority")}
            value={form.values.priority}
            error={form.errors.priority}
            onChange={(v) => form.set("priority", v)}
            allowDecimal={false}
          />
          <NumberInput
            label={t("admin.channels.weight")}
            value={form.values.weight}
            error={form.errors.weight}
            min={0}
            onChange={(v) => form.set("weight", v)}
            allowDecimal={false}
          />
          {form.values.type === "azure" && (
            <TextInput
              label={t("admin.channels.apiVersion")}
              placeholder="2024-10-21"
              description={t("admin.channels.apiVersionDefault")}
              {...form.field("apiVersion")}
            />
          )}
        </SimpleGrid>
        <Switch
          label={t("common.enabled")}
          checked={form.values.enabled}
          onChange={(e) => form.set("enabled", e.currentTarget.checked)}
        />
        {form.values.type === "openai" && (
          <Switch
            label={t("admin.channels.responses")}
            description={t("admin.channels.responsesHint")}
            checked={form.values.responses}
            error={form.errors.responses}
            onChange={(e) => form.set("responses", e.currentTarget.checked)}
          />
        )}
        <Accordion variant="contained" chevronPosition="left" transitionDuration={0}>
          <Accordion.Item value="routing">
            <Accordion.Control>{t("admin.channels.advanced")}</Accordion.Control>
            <Accordion.Panel>
              <Stack>
                <Text size="sm" fw={600}>{t("admin.channels.timeouts")}</Text>
                <SimpleGrid cols={{ base: 2, sm: 4 }}>
                  {TIMEOUTS.map((name) => (
                    <NumberInput
                      key={name}
                      label={t(`admin.channels.timeouts.${name}` as MessageKey)}
                      value={form.values.timeouts[name]}
                      min={1}
                      allowDecimal={false}
                      onChange={(v) => form.set("timeouts", { ...form.values.timeouts, [name]: v })}
                    />
                  ))}
                </SimpleGrid>
                {groupError("timeouts")}
                <Text size="sm" fw={600}>{t("admin.channels.breaker")}</Text>
                <SimpleGrid cols={{ base: 2, sm: 3 }}>
                  {BREAKER.map((name) => (
                    <NumberInput
                      key={name}
                      label={t(`admin.channels.breaker.${name}` as MessageKey)}
                      value={form.values.breaker[name]}
                      min={name === "failureRate" ? 0.01 : 1}
                      {...(name === "failureRate" ? { max: 1 } : {})}
                      step={name === "failureRate" ? 0.05 : 1}
                      allowDecimal={name === "failureRate"}
                      onChange={(v) => form.set("breaker", { ...form.values.breaker, [name]: v })}
                    />
                  ))}
                </SimpleGrid>
                {groupError("breaker")}
                <Textarea
                  label={t("admin.channels.headers")}
                  description={t("admin.channels.headersHint")}
                  autosize
                  minRows={1}
                  ff="monospace"
                  placeholder="HTTP-Referer: https://example.com"
                  {...form.field("headers")}
                />
                <SimpleGrid cols={{ base: 1, sm: 2 }}>
                  <Textarea
                    label={t("admin.channels.paramDefaults")}
                    autosize
                    minRows={2}
                    ff="monospace"
                    placeholder={"{\"temperature\": 0.7}"}
                    {...form.field("paramDefaults")}
                  />
                  <Textarea
                    label={t("admin.channels.paramOverrides")}
                    autosize
                    minRows={2}
                    ff="monospace"
                    placeholder={"{\"max_tokens\": 4096}"}
                    {...form.field("paramOverrides")}
                  />
                </SimpleGrid>
                {groupError("params")}
                <Text size="xs" c="dimmed">{t("admin.channels.paramsHint")}</Text>
                <Switch
                  label={t("admin.channels.streamOptions")}
                  description={t("admin.channels.streamOptionsHint")}
                  checked={form.values.streamOptions}
                  onChange={(e) => form.set("streamOptions", e.currentTarget.checked)}
                />
              </Stack>
            </Accordion.Panel>
          </Accordion.Item>
        </Accordion>
        <Group justify="flex-end">
          <Button type="submit" loading={form.submitting}>
            {channel === undefined ? t("common.create") : t("common.save")}
          </Button>
        </Group>
      </Stack>
    </form>
  )
}

/** A Test result as kept in the browser, so a reload does not lose it. */
interface KeptResult {
  readonly at: number
  readonly result: Contract.TestChannelResult
}

const TESTS_KEY = "modelgate.channelTests"

/** The kept Test results of every channel, by channel id and then by model. @category helpers */
export const keptTests = (): Record<string, Record<string, KeptResult>> => {
  try {
    const parsed: unknown = JSON.parse(globalThis.localStorage?.getItem(TESTS_KEY) ?? "{}")
    return typeof parsed === "object" && parsed !== null ? parsed as Record<string, Record<string, KeptResult>> : {}
  } catch {
    return {}
  }
}

const keepTests = (channelId: string, results: Record<string, KeptResult>) => {
  try {
    globalThis.localStorage?.setItem(TESTS_KEY, JSON.stringify({ ...keptTests(), [channelId]: results }))
  } catch {
    // Storage unavailable (private mode): the results stay until the page reloads.
  }
}

/**
 * The Test button beside the row's other actions, with a menu to test one
 * model of the channel's or all of them, and the results (kept in the browser
 * across reloads, each with when it ran) on their own lines below the buttons,
 * so a long upstream error never pushes the buttons away.
 */
function TestButton({ channel, children }: { readonly channel: Contract.AdminChannel; readonly children?: ReactNode }) {
  const { t, locale } = useI18n()
  const client = useQueryClient()
  const [busy, setBusy] = useState(false)
  const [results, setResults] = useState<Record<string, KeptResult>>(() => keptTests()[channel.id] ?? {})
  const run = async (models: ReadonlyArray<string | undefined>) => {
    setBusy(true)
    // "Test" alone tests one model: the results of the others would be stale beside it.
    let next: Record<string, KeptResult> = models.length > 1 ? {} : { ...results }
    try {
      for (const model of models) {
        const result = await call((api) =>
          api.catalog.testChannel({ params: { id: channel.id }, payload: model === undefined ? {} : { model } })
        )
        next = models.length === 1 && model === undefined
          ? { [result.model]: { at: Date.now(), result } }
          : { ...next, [result.model]: { at: Date.now(), result } }
        setResults(next)
        keepTests(channel.id, next)
      }
      // The test went into the keys' health: show it.
      await client.invalidateQueries({ queryKey: ["admin", "channels"] })
    } catch (error) {
      notifications.show({ color: "red", message: errorMessage(error, t) })
    } finally {
      setBusy(false)
    }
  }
  const shown = Object.values(results).filter((kept) => channel.models.includes(kept.result.model))
  return (
    <Stack gap={4} align="flex-start">
      <Group gap={4} wrap="nowrap">
        <Button.Group>
          <Button
            size="xs"
            variant="light"
            leftSection={<IconPlayerPlay size={14} />}
            loading={busy}
            aria-label={`${t("admin.channels.test")} ${channel.name}`}
            onClick={() => void run([undefined])}
          >
            {t("admin.channels.test")}
          </Button>
          <Menu position="bottom-end" withinPortal>
            <Menu.Target>
              <Button
                size="xs"
                variant="light"
                px={4}
                disabled={busy}
                aria-label={t("admin.channels.testChoose", { name: channel.name })}
              >
                <IconChevronDown size={14} />
              </Button>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Label>{t("admin.channels.testModel")}</Menu.Label>
              {channel.models.map((m) => <Menu.Item key={m} ff="monospace" onClick={() => void run([m])}>{m}
              </Menu.Item>)}
              {channel.models.length > 1 && (
                <>
                  <Menu.Divider />
                  <Menu.Item onClick={() => void run(channel.models)}>{t("admin.channels.testAll")}</Menu.Item>
                </>
              )}
            </Menu.Dropdown>
          </Menu>
        </Button.Group>
        {children}
      </Group>
      {shown.map(({ at, result }) => (
        <Stack gap={0} maw={300} key={result.model}>
          <Text size="xs" c={result.ok ? "teal" : "red"} style={{ overflowWrap: "anywhere" }} data-testid="test-result">
            {result.ok
              ? t("admin.channels.testOk", { ms: Math.round(result.latencyMs), message: result.message })
              : t("admin.channels.testFailed", {
                status: result.status ?? "—",
                ms: Math.round(result.latencyMs),
                message: result.message
              })}
          </Text>
          <Text size="xs" c="dimmed">
            {result.ok ? "" : `${result.model} · `}
            {t("admin.channels.testedAt", { when: ago(at, locale) })}
            {result.keys.length > 1 && !result.ok
              ? ` · ${
                t("admin.channels.testKeys", {
                  failed: result.keys.filter((k) => !k.ok).length,
                  total: result.keys.length
                })
              }`
              : ""}
          </Text>
        </Stack>
      ))}
    </Stack>
  )
}

const STATE_COLOR: Record<Contract.KeyHealth["state"] | Contract.ChannelHealth["state"], string> = {
  healthy: "teal",
  degraded: "yellow",
  half_open: "yellow",
  open: "orange",
  disabled: "red"
}

/**
 * A channel's health: its state, for each key its state, why and since when
 * (never the key itself), and the models kept off the channel after a 403
 * about the model, why and until when.
 *
 * @category components
 */
export function ChannelHealthCell(
  { health, now = Date.now() }: { readonly health: Contract.ChannelHealth; readonly now?: number }
) {
  const { t, locale } = useI18n()
  // Keys worth a line: those not healthy, or healthy with recent failures.
  const shown = health.keys.filter((key) => key.state !== "healthy" || key.recentFailures > 0)
  return (
    <Stack
      gap={4}
      miw={shown.length > 0 || health.refusedModels.length > 0 ? 220 : 100}
      maw={340}
      data-testid="channel-health"
    >
      <Badge size="sm" color={STATE_COLOR[health.state]} variant="light">
        {t(`admin.channels.state.${health.state}` as MessageKey)}
      </Badge>
      {shown.map((key) => (
        <Stack key={key.index} gap={0}>
          <Group gap={6} wrap="nowrap">
            <Text size="xs" ff="monospace" style={{ whiteSpace: "nowrap" }}>{key.hint}</Text>
            <Badge
              size="xs"
              color={STATE_COLOR[key.state]}
              variant={key.state === "healthy" ? "outline" : "filled"}
              style={{ flexShrink: 0 }}
            >
              {t(`admin.channels.state.${key.state}` as MessageKey)}
            </Badge>
            {key.recentFailures > 0 && (
              <Text size="xs" c="dimmed">
                {t("admin.channels.recent", { failures: key.recentFailures, calls: key.recentCalls })}
              </Text>
            )}
          </Group>
          {key.state !== "healthy" && (
            <Text size="xs" c="dimmed">
              {[
                key.reason,
                key.since !== null ? t("admin.channels.since", { when: ago(key.since, locale, now) }) : null,
                key.retryAt !== null ? t("admin.channels.retryAt", { when: ago(key.retryAt, locale, now) }) : null,
                key.lastProbeAt !== null
                  ? t(key.lastProbeOk === true ? "admin.channels.probeOk" : "admin.channels.probeFailed", {
                    when: ago(key.lastProbeAt, locale, now)
                  })
                  : null
              ].filter((part) => part !== null).join(" · ")}
            </Text>
          )}
        </Stack>
      ))}
      {health.refusedModels.map((refused) => (
        <Stack key={`model:${refused.model}`} gap={0} data-testid="refused-model">
          <Group gap={6} wrap="nowrap">
            <Text size="xs" ff="monospace" style={{ whiteSpace: "nowrap" }}>{refused.model}</Text>
            <Badge
              size="xs"
              color="orange"
              variant="filled"
              style={{ flexShrink: 0 }}
              title={t("admin.channels.modelRefused.title")}
            >
              {t("admin.channels.modelRefused")}
            </Badge>
          </Group>
          <Text size="xs" c="dimmed">
            {[
              refused.reason,
              t("admin.channels.since", { when: ago(refused.since, locale, now) }),
              t("admin.channels.modelBack", { when: ago(refused.until, locale, now) })
            ].join(" · ")}
          </Text>
        </Stack>
      ))}
    </Stack>
  )
}

/** The channels page: a table, or one card per channel at a phone's width. @category pages */
export function AdminChannelsPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const phone = useMediaQuery("(max-width: 48em)")
  // Health changes on its own (breakers, probes): refresh every few seconds.
  const channels = useQuery({
    queryKey: ["admin", "channels"],
    queryFn: () => call((api) => api.catalog.listChannels()),
    refetchInterval: 5_000
  })
  const groups = useQuery({ queryKey: ["admin", "groups"], queryFn: () => call((api) => api.catalog.listGroups()) })
  const [editing, setEditing] = useState<Contract.AdminChannel | "new" | undefined>(undefined)
  const refresh = () => client.invalidateQueries({ queryKey: ["admin", "channels"] })
  const groupNames = (groups.data?.data ?? []).map((g) => g.name)
  const failed = (error: unknown) =>
    notifications.show({ color: "red", title: t("common.error"), message: errorMessage(error, t) })

  const name = (c: Contract.AdminChannel) => (
    <>
      <Group gap={6} wrap="nowrap">
        <Text fw={600} size="sm">{c.name}</Text>
        <Badge size="xs" variant="light" style={{ flexShrink: 0 }}>{c.type}</Badge>
      </Group>
      <Text size="xs" c="dimmed" ff="monospace" style={{ overflowWrap: "anywhere" }}>{c.baseUrl}</Text>
    </>
  )
  const models = (c: Contract.AdminChannel) => (
    <Stack gap={2}>
      {c.models.map((m) => (
        <Text key={m} size="xs" ff="monospace" style={{ overflowWrap: "anywhere" }}>
          {c.modelMap[m] ? `${m} → ${c.modelMap[m]}` : m}
        </Text>
      ))}
    </Stack>
  )
  const groupBadges = (c: Contract.AdminChannel) => (
    <Group gap={4}>
      {c.groups.map((g) => <Badge key={g} size="sm" variant="light" style={{ overflow: "visible" }}>{g}</Badge>)}
    </Group>
  )
  const keys = (c: Contract.AdminChannel) => (
    <Stack gap={0}>
      <Text size="sm">{t("admin.channels.keyCount", { count: c.keyCount })}</Text>
      <Text size="xs" ff="monospace" c="dimmed">{c.keyHints.join(" ")}</Text>
    </Stack>
  )
  const enabled = (c: Contract.AdminChannel) => (
    <Switch
      checked={c.enabled}
      aria-label={`${c.name} ${t("common.enabled")}`}
      data-testid="channel-enabled"
      onChange={async (e) => {
        try {
          await call((api) =>
            api.catalog.updateChannel({ params: { id: c.id }, payload: { enabled: e.currentTarget.checked } })
          )
          await refresh()
        } catch (error) {
          failed(error)
        }
      }}
    />
  )
  const actions = (c: Contract.AdminChannel) => (
    <TestButton channel={c}>
      {c.health.state !== "healthy" && (
        <Button
          size="xs"
          variant="light"
          color="orange"
          leftSection={<IconRefresh size={14} />}
          aria-label={`${t("admin.channels.reset")} ${c.name}`}
          onClick={async () => {
            try {
              await call((api) => api.catalog.resetChannel({ params: { id: c.id } }))
              await refresh()
            } catch (error) {
              failed(error)
            }
          }}
        >
          {t("admin.channels.reset")}
        </Button>
      )}
      <Button size="xs" variant="subtle" onClick={() => setEditing(c)}>
        {t("common.edit")}
      </Button>
      <ConfirmButton
        title={t("admin.channels.deleteTitle", { name: c.name })}
        confirmLabel={t("common.delete")}
        onConfirm={async () => {
          await call((api) => api.catalog.deleteChannel({ params: { id: c.id } }))
          await refresh()
        }}
      >
        {t("common.delete")}
      </ConfirmButton>
    </TestButton>
  )
  const nowrap = { whiteSpace: "nowrap" } as const

  return (
    <>
      <PageHeader
        title={t("admin.channels.title")}
        subtitle={t("admin.channels.subtitle")}
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing("new")}>
            {t("admin.channels.create")}
          </Button>
        }
      />
      <Paper withBorder radius="md" p="xs">
        <QueryState query={channels}>
          {(data) =>
            data.data.length === 0
              ? (
                <EmptyState
                  icon={<IconServer size={28} />}
                  title={t("admin.channels.empty")}
                  hint={t("admin.channels.emptyHint")}
                  action={<Button onClick={() => setEditing("new")}>{t("admin.channels.create")}</Button>}
                />
              )
              : phone
              ? (
                // At a phone's width: one card per channel, health and status first.
                <Stack gap="sm" data-testid="channels-table" data-layout="cards">
                  {data.data.map((c) => (
                    <Paper key={c.id} withBorder radius="md" p="sm" data-channel={c.name}>
                      <Stack gap="xs">
                        <Group justify="space-between" wrap="nowrap" align="flex-start">
                          <Stack gap={0} style={{ minWidth: 0 }}>{name(c)}</Stack>
                          {enabled(c)}
                        </Group>
                        <ChannelHealthCell health={c.health} />
                        <SimpleGrid cols={2} spacing="xs">
                          <Stack gap={2}>
                            <Text size="xs" c="dimmed">{t("admin.channels.models")}</Text>
                            {models(c)}
                          </Stack>
                          <Stack gap={2}>
                            <Text size="xs" c="dimmed">{t("admin.channels.groups")}</Text>
                            {groupBadges(c)}
                            <Text size="xs" c="dimmed">{t("admin.channels.keys")}</Text>
                            {keys(c)}
                          </Stack>
                        </SimpleGrid>
                        {actions(c)}
                      </Stack>
                    </Paper>
                  ))}
                </Stack>
              )
              : (
                <WideTable minWidth={1040} stickyLast>
                  <Table verticalSpacing="sm" highlightOnHover data-testid="channels-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>{t("common.name")}</Table.Th>
                        <Table.Th>{t("admin.channels.models")}</Table.Th>
                        <Table.Th style={nowrap}>{t("admin.channels.groups")}</Table.Th>
                        <Table.Th style={nowrap}>{t("admin.channels.keys")}</Table.Th>
                        <Table.Th ta="right" style={nowrap}>
                          {t("admin.channels.priority")} / {t("admin.channels.weight")}
                        </Table.Th>
                        <Table.Th style={nowrap}>{t("admin.channels.health")}</Table.Th>
                        <Table.Th style={nowrap}>{t("keys.status")}</Table.Th>
                        <Table.Th style={nowrap}>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((c) => (
                        <Table.Tr key={c.id} data-channel={c.name}>
                          <Table.Td miw={160}>{name(c)}</Table.Td>
                          <Table.Td miw={150}>{models(c)}</Table.Td>
                          <Table.Td style={nowrap}>{groupBadges(c)}</Table.Td>
                          <Table.Td style={nowrap}>{keys(c)}</Table.Td>
                          <Table.Td ta="right">{c.priority} / {c.weight}</Table.Td>
                          <Table.Td>
                            <ChannelHealthCell health={c.health} />
                          </Table.Td>
                          <Table.Td>{enabled(c)}</Table.Td>
                          <Table.Td>{actions(c)}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </WideTable>
              )}
        </QueryState>
      </Paper>
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        // Esc (in the model picker or a dropdown) never throws a half-filled channel away: close with ×.
        closeOnEscape={false}
        closeOnClickOutside={false}
        title={<Text fw={700}>{editing === "new" ? t("admin.channels.create") : editing?.name}</Text>}
        centered
        size="lg"
      >
        {editing !== undefined && (
          <ChannelForm
            channel={editing === "new" ? undefined : editing}
            groups={groupNames}
            onDone={() => {
              setEditing(undefined)
              notifications.show({ color: "teal", message: t("common.saved") })
              void refresh()
            }}
          />
        )}
      </Modal>
    </>
  )
}

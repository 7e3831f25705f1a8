/**
 * The request log: every call made with a key (a user's own; for admins,
 * everyone's), refused ones too, newest first and live (the first pages are
 * read again every second, so a new call appears within about a second of
 * its end). Filters: a request id search, period, status class, error code,
 * model, key, and for admins user and channel; CSV export of the same. A row
 * opens the call's details: its status and the message its caller got,
 * tokens, cost, latency and time to first byte, and for admins the channel,
 * the upstream model and every upstream attempt with its error.
 *
 * @since 0.1.0
 */
import {
  Alert,
  Badge,
  Button,
  Divider,
  Drawer,
  Group,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Tooltip
} from "@mantine/core"
import { useDebouncedValue, useMediaQuery } from "@mantine/hooks"
import { IconDownload, IconInfoCircle, IconListSearch, IconSearch } from "@tabler/icons-react"
import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, useMemo, useRef, useState } from "react"
import { useSearchParams } from "react-router"
import { CopyIcon, PageHeader } from "../components/Bits.tsx"
import { last30, type Period, periodBounds, PeriodFilter } from "../components/Period.tsx"
import { EmptyState, ErrorState, Loading } from "../components/States.tsx"
import { Usd } from "../components/Usd.tsx"
import { WideTable } from "../components/WideTable.tsx"
import { call, type Contract, urls } from "../lib/api.ts"
import { dateTime, exactUsd, tokens } from "../lib/format.ts"
import { type MessageKey, useI18n } from "../lib/i18n.tsx"
import { sessionKey, useSession } from "../lib/session.tsx"
import { ModelFilter } from "./Usage.tsx"

/** How often the first pages are read again while live. @category constants */
export const LIVE_INTERVAL_MS = 1_000

/** Live updates read at most this many pages again each time; with more open they pause. @category constants */
export const LIVE_MAX_PAGES = 2

/** The error codes a call can end with (the gateway's errors and settlement's own), for the filter. @category constants */
export const ERROR_CODES: ReadonlyArray<string> = [
  "InvalidRequest",
  "UnsupportedFeature",
  "RequestTooLarge",
  "ModelNotFound",
  "ModelNotAllowed",
  "ModelNotInGroup",
  "ModelUnpriced",
  "RateLimited",
  "InsufficientBalance",
  "SpendingCapReached",
  "DatabaseUnavailable",
  "UpstreamUnavailable",
  "UpstreamTimeout",
  "UpstreamRateLimited",
  "UpstreamRejected",
  "ClientClosed",
  "ShuttingDown",
  "InternalError",
  "BalanceOverdrawn",
  "SpendingCapOverrun",
  "UsageRejected",
  "SettlementFailed"
]

const STATUSES: ReadonlyArray<Contract.StatusClass> = ["ok", "error", "4xx", "5xx"]

const DIALECTS: Record<Contract.Dialect | "bedrock", string> = {
  openai: "OpenAI",
  gemini: "Gemini",
  anthropic: "Anthropic",
  responses: "OpenAI Responses",
  bedrock: "Bedrock Converse"
}

/** The codes of calls refused before any upstream was tried (what a user, who sees no attempts, is told by). */
const REFUSALS = new Set([
  "InvalidRequest",
  "UnsupportedFeature",
  "RequestTooLarge",
  "ModelNotFound",
  "ModelNotAllowed",
  "ModelNotInGroup",
  "ModelUnpriced",
  "RateLimited",
  "InsufficientBalance",
  "SpendingCapReached",
  "DatabaseUnavailable"
])

/** Whether a call was refused before any upstream was tried (so nothing was charged). @category helpers */
export const refusedBeforeUpstream = (record: Contract.UsageItem): boolean =>
  record.status >= 400 &&
  (record.attempts !== undefined ? record.attempts === 0 : record.errorCode !== null && REFUSALS.has(record.errorCode))

/**
 * The gateway's error codes in Chinese: a short name for the badge and what
 * it means for the explanation (English shows the code and the gateway's own
 * words, which are English).
 *
 * @category dictionaries
 */
export const ZH_CODES: Readonly<Record<string, { readonly label: string; readonly explain: string }>> = {
  missing_api_key: { label: "缺少密钥", explain: "请求没有带 API 密钥。" },
  invalid_api_key: { label: "密钥无效", explain: "API 密钥无效：请检查是否完整复制，或在「API 密钥」页面新建一个。" },
  key_disabled: {
    label: "密钥已停用",
    explain: "该 API 密钥已停用或已撤销：请在「API 密钥」页面启用，或换用其他密钥。"
  },
  key_expired: {
    label: "密钥已过期",
    explain: "该 API 密钥已过期：请新建密钥，或在「API 密钥」页面「编辑」中延长有效期。"
  },
  invalid_request: { label: "请求有误", explain: "请求内容有误，网关未转发给上游。" },
  unsupported_feature: { label: "不支持的功能", explain: "请求用到了该模型或渠道不支持的功能。" },
  model_not_found: { label: "模型不存在", explain: "网关上没有这个模型：请在「模型」页面查看可用模型。" },
  model_not_allowed: {
    label: "密钥不可用此模型",
    explain: "该密钥不允许调用此模型：请换用允许的模型，或在「API 密钥」页面「编辑」中修改密钥的模型。"
  },
  model_not_in_group: {
    label: "分组无此模型",
    explain: "该密钥所在的分组没有渠道提供此模型：请联系管理员为分组关联渠道。"
  },
  model_unpriced: {
    label: "模型未定价",
    explain: "此模型尚未定价，网关不会放行：请联系管理员在「模型与价格」中设置价格。"
  },
  request_too_large: { label: "请求过大", explain: "请求体超过了网关允许的大小。" },
  insufficient_quota: {
    label: "余额或上限不足",
    explain: "余额不足，或达到了密钥的消费上限：请充值，或在「API 密钥」页面「编辑」中提高上限。"
  },
  rate_limit_exceeded: { label: "超出速率限制", explain: "超出了每分钟请求数、token 数或并发数的限制：请稍后重试。" },
  upstream_rate_limited: { label: "上游限流", explain: "上游服务商对该渠道限流：请稍后重试。" },
  upstream_error: { label: "上游出错", explain: "上游服务出错，网关已按路由设置重试其他渠道。" },
  upstream_timeout: { label: "上游超时", explain: "上游在规定时间内没有响应。" },
  upstream_rejected: { label: "上游拒绝", explain: "上游拒绝了该请求。" },
  forbidden: { label: "无权限", explain: "没有权限执行此操作。" },
  not_found: { label: "未找到", explain: "请求的地址不存在。" },
  method_not_allowed: { label: "方法不允许", explain: "该地址不支持此请求方法。" },
  internal_error: { label: "服务器错误", explain: "网关处理请求失败，原因已记录在服务器日志中。" },
  service_unavailable: { label: "服务不可用", explain: "网关暂时无法服务：请稍后重试。" },
  database_unavailable: { label: "数据库不可用", explain: "网关暂时连不上数据库：请稍后重试。" },
  insufficient_balance: { label: "余额不足", explain: "余额不足以支付这次调用：请充值或兑换兑换码。" },
  spending_cap_reached: {
    label: "达到消费上限",
    explain: "密钥达到了消费上限：请在「API 密钥」页面「编辑」中提高上限，或等到周期结束。"
  },
  rate_limited: { label: "超出速率限制", explain: "超出了每分钟请求数、token 数或并发数的限制：请稍后重试。" },
  upstream_unavailable: { label: "上游不可用", explain: "上游服务出错或不可用，网关已按路由设置重试其他渠道。" },
  resource_not_found: { label: "未找到", explain: "请求的资源不存在。" },
  route_not_found: { label: "地址不存在", explain: "请求的地址不存在。" }
}

/** The Chinese of an error code, as recorded (`ModelNotAllowed`) or as sent (`model_not_allowed`). @category helpers */
export const zhCode = (code: string | null) =>
  code === null ? undefined : ZH_CODES[code.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()]

/** A call's outcome as a badge: its error code when it has one, else its status. @category components */
export function StatusBadge({ record }: { readonly record: Pick<Contract.UsageItem, "status" | "errorCode"> }) {
  const { language } = useI18n()
  const zh = language === "zh" ? zhCode(record.errorCode) : undefined
  const color = record.status >= 500
    ? "red"
    : record.status >= 400
    ? "orange"
    : record.errorCode === null
    ? "teal"
    : "yellow"
  return (
    <Badge
      color={color}
      variant="light"
      // Never cut short: the whole code (or its name) is what the badge says.
      style={{ textTransform: "none", maxWidth: "none", overflow: "visible" }}
      styles={{ label: { overflow: "visible" } }}
      data-testid="status-badge"
    >
      {record.errorCode === null
        ? record.status
        : `${record.status} ${zh?.label ?? record.errorCode}`}
    </Badge>
  )
}

/**
 * A table of calls; a row (or its request id) opens the call.
 *
 * @category components
 */
export function RequestTable({ records, admin, onOpen }: {
  readonly records: ReadonlyArray<Contract.UsageItem>
  readonly admin: boolean
  readonly onOpen: (record: Contract.UsageItem) => void
}) {
  const { t, locale } = useI18n()
  return (
    <WideTable minWidth={admin ? 980 : 820}>
      <Table verticalSpacing="xs" striped highlightOnHover data-testid="requests-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("requests.time")}</Table.Th>
            {admin && <Table.Th>{t("requests.user")}</Table.Th>}
            <Table.Th>{t("requests.key")}</Table.Th>
            <Table.Th>{t("requests.model")}</Table.Th>
            <Table.Th ta="right">{t("requests.tokens")}</Table.Th>
            <Table.Th ta="right">{t("requests.cost")}</Table.Th>
            <Table.Th ta="right">{t("requests.latency")}</Table.Th>
            <Table.Th>{t("requests.status")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {records.map((r) => (
            <Table.Tr
              key={r.id}
              data-request={r.requestId}
              style={{ cursor: "pointer" }}
              onClick={() => onOpen(r)}
            >
              <Table.Td>
                <Text size="sm" style={{ whiteSpace: "nowrap" }}>{dateTime(r.createdAt, locale)}</Text>
                <Text
                  component="button"
                  type="button"
                  size="xs"
                  c="dimmed"
                  ff="monospace"
                  aria-label={t("requests.open", { id: r.requestId })}
                  onClick={(e) => {
                    e.stopPropagation()
                    onOpen(r)
                  }}
                  style={{ background: "none", border: 0, padding: 0, cursor: "pointer" }}
                >
                  {r.requestId}
                </Text>
              </Table.Td>
              {admin && (
                <Table.Td>
                  <Text size="sm">{r.userName}</Text>
                </Table.Td>
              )}
              <Table.Td>
                <Text size="sm">{r.keyName ?? r.keyId}</Text>
              </Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  <Text size="sm" ff="monospace">{r.model === "" ? "—" : r.model}</Text>
                  {r.stream && <Badge size="xs" variant="light">stream</Badge>}
                </Group>
                {admin && r.channel !== undefined && r.channel !== "" && (
                  <Text size="xs" c="dimmed" ff="monospace">
                    → {r.channel}
                    {r.upstreamModel !== undefined && r.upstreamModel !== r.model ? ` · ${r.upstreamModel}` : ""}
                  </Text>
                )}
              </Table.Td>
              <Table.Td ta="right">
                <Text size="sm">{tokens(r.promptTokens)} / {tokens(r.completionTokens)}</Text>
              </Table.Td>
              <Table.Td ta="right">
                <Text size="sm" ff="monospace">
                  <Usd amount={r.cost} />
                </Text>
              </Table.Td>
              <Table.Td ta="right">
                <Text size="sm" style={{ whiteSpace: "nowrap" }}>{r.latencyMs.toLocaleString(locale)} ms</Text>
                {r.ttfbMs !== null && r.stream && (
                  <Text size="xs" c="dimmed" style={{ whiteSpace: "nowrap" }}>
                    {t("requests.ttfbShort", { ms: r.ttfbMs })}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <StatusBadge record={r} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </WideTable>
  )
}

function Fact(
  { label, children, testId }: { readonly label: string; readonly children: ReactNode; readonly testId?: string }
) {
  return (
    <Stack gap={2}>
      <Text size="xs" fw={600} c="dimmed" tt="uppercase">{label}</Text>
      <Text size="sm" component="div" data-testid={testId}>{children}</Text>
    </Stack>
  )
}

/**
 * One call, whole: what it asked for, how it ended and why, what it used and
 * cost, and (admins) where it went, attempt by attempt.
 *
 * @category components
 */
export function RequestDetail(
  { record, onClose }: { readonly record: Contract.UsageItem | undefined; readonly onClose: () => void }
) {
  const { t, locale, language } = useI18n()
  const phone = useMediaQuery("(max-width: 48em)")
  const r = record
  return (
    <Drawer
      opened={r !== undefined}
      onClose={onClose}
      position="right"
      size={phone ? "100%" : 560}
      title={<Text fw={700}>{t("requests.detail")}</Text>}
      transitionProps={{ duration: 0 }}
    >
      {r !== undefined && (
        <Stack gap="md" data-testid="request-detail">
          <Group gap={6} wrap="nowrap">
            <Text ff="monospace" size="sm" data-testid="detail-request-id" style={{ overflowWrap: "anywhere" }}>
              {r.requestId}
            </Text>
            <CopyIcon value={r.requestId} />
          </Group>
          <Group gap="xs">
            <StatusBadge record={r} />
            <Text size="sm" c="dimmed">{dateTime(r.createdAt, locale)}</Text>
          </Group>
          {r.errorMessage !== null && (
            <Alert
              color={r.status >= 400 ? "red" : "yellow"}
              variant="light"
              title={t("requests.error")}
              icon={<IconInfoCircle />}
              data-testid="detail-error"
            >
              {language === "zh" && zhCode(r.errorCode) !== undefined && (
                <Text size="sm" mb={4} data-testid="detail-error-zh">{zhCode(r.errorCode)!.explain}</Text>
              )}
              <Text
                size={language === "zh" ? "xs" : "sm"}
                {...(language === "zh" ? { c: "dimmed" } : {})}
                style={{ overflowWrap: "anywhere" }}
              >
                {r.errorMessage}
              </Text>
            </Alert>
          )}
          {refusedBeforeUpstream(r) && (
            <Text size="sm" c="dimmed" data-testid="detail-refused">{t("requests.refused")}</Text>
          )}
          <SimpleGrid cols={2} spacing="sm">
            <Fact label={t("requests.user")}>{r.userName}</Fact>
            <Fact label={t("requests.key")}>{r.keyName ?? r.keyId}</Fact>
            <Fact label={t("requests.modelAsked")}>
              <Text span ff="monospace" size="sm">{r.model === "" ? "—" : r.model}</Text>
            </Fact>
            <Fact label={t("requests.dialect")}>
              {DIALECTS[r.dialect]} · {r.stream ? t("requests.streamed") : t("requests.notStreamed")}
            </Fact>
            {r.channel !== undefined && (
              <Fact label={t("requests.upstream")} testId="detail-channel">
                {r.channel === "" ? "—" : (
                  <Text span ff="monospace" size="sm">
                    {r.channel}
                    {r.upstreamDialect !== undefined ? ` (${DIALECTS[r.upstreamDialect]})` : ""}
                  </Text>
                )}
              </Fact>
            )}
            {r.upstreamModel !== undefined && r.channel !== "" && (
              <Fact label={t("requests.upstreamModel")}>
                <Text span ff="monospace" size="sm">{r.upstreamModel}</Text>
              </Fact>
            )}
          </SimpleGrid>
          <Divider />
          <SimpleGrid cols={2} spacing="sm">
            <Fact label={t("requests.prompt")}>
              {r.promptTokens.toLocaleString(locale)}
              {r.cachedTokens > 0 && (
                <Text span size="xs" c="dimmed">({t("requests.cached")} {r.cachedTokens.toLocaleString(locale)})</Text>
              )}
            </Fact>
            <Fact label={t("requests.completion")}>
              {r.completionTokens.toLocaleString(locale)}
              {r.reasoningTokens > 0 && (
                <Text span size="xs" c="dimmed">
                  ({t("requests.reasoning")} {r.reasoningTokens.toLocaleString(locale)})
                </Text>
              )}
            </Fact>
            <Fact label={t("requests.cost")} testId="detail-cost">{exactUsd(r.cost)}</Fact>
            <Fact label={t("requests.latency")}>
              {r.latencyMs.toLocaleString(locale)} ms
            </Fact>
            <Fact label={t("requests.ttfb")}>{r.ttfbMs === null ? "—" : `${r.ttfbMs.toLocaleString(locale)} ms`}</Fact>
          </SimpleGrid>
          {!r.usageReported && r.promptTokens + r.completionTokens > 0 && (
            <Text size="xs" c="dimmed">{t("requests.estimated")}</Text>
          )}
          {r.attemptLog !== undefined && (
            <>
              <Divider label={t("requests.attempts")} labelPosition="left" />
              {r.attemptLog.length === 0
                ? <Text size="sm" c="dimmed">{t("requests.noAttempts")}</Text>
                : (
                  <Stack gap="xs" data-testid="detail-attempts">
                    {r.attemptLog.map((attempt, i) => (
                      <Paper key={i} withBorder p="xs" radius="sm" data-attempt={attempt.channel}>
                        <Group justify="space-between" wrap="nowrap" gap="xs">
                          <Group gap={6} wrap="nowrap">
                            <Text size="sm" fw={600}>{i + 1}.</Text>
                            <Text size="sm" ff="monospace">{attempt.channel}</Text>
                            <Text size="xs" c="dimmed" ff="monospace">{attempt.keyHint}</Text>
                          </Group>
                          <Group gap={6} wrap="nowrap">
                            {attempt.status !== null && (
                              <Badge size="sm" variant="outline" color={attempt.status < 400 ? "teal" : "red"}>
                                {attempt.status}
                              </Badge>
                            )}
                            <Text size="xs" c="dimmed">{attempt.durationMs.toLocaleString(locale)} ms</Text>
                          </Group>
                        </Group>
                        <Text
                          size="xs"
                          mt={4}
                          c={attempt.errorCode === null ? "teal" : "red"}
                          style={{ overflowWrap: "anywhere" }}
                        >
                          {attempt.errorCode === null
                            ? t("requests.attempt.ok")
                            : `${attempt.errorCode}${attempt.errorMessage === null ? "" : `: ${attempt.errorMessage}`}`}
                        </Text>
                      </Paper>
                    ))}
                  </Stack>
                )}
            </>
          )}
        </Stack>
      )}
    </Drawer>
  )
}

/**
 * Calls with "Load more", live while at most `LIVE_MAX_PAGES` pages are
 * open, and the detail of the one opened. `load` fetches the page after
 * `cursor`.
 *
 * @category components
 */
export function RequestList({ queryKey, load, admin, live = true, emptyTitle, emptyHint }: {
  readonly queryKey: ReadonlyArray<unknown>
  readonly load: (cursor: string | undefined) => Promise<Contract.UsagePage>
  readonly admin: boolean
  readonly live?: boolean
  readonly emptyTitle?: string
  readonly emptyHint?: string
}) {
  const { t } = useI18n()
  const [open, setOpen] = useState<Contract.UsageItem | undefined>(undefined)
  const records = useInfiniteQuery({
    queryKey,
    queryFn: ({ pageParam }) => load(pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // New calls appear without a reload: the open pages are read again (a paged-back view pauses this).
    refetchInterval: (query) =>
      live && (query.state.data?.pages.length ?? 1) <= LIVE_MAX_PAGES ? LIVE_INTERVAL_MS : false
  })
  const rows = records.data?.pages.flatMap((p) => p.data) ?? []
  const paused = live && (records.data?.pages.length ?? 1) > LIVE_MAX_PAGES
  // The opened call as the latest read has it.
  const opened = open === undefined ? undefined : rows.find((r) => r.id === open.id) ?? open
  return records.isPending
    ? <Loading />
    : records.error
    ? <ErrorState error={records.error} onRetry={() => void records.refetch()} />
    : rows.length === 0
    ? (
      <EmptyState
        icon={<IconListSearch size={28} />}
        title={emptyTitle ?? t("requests.empty")}
        {...(emptyHint === undefined ? {} : { hint: emptyHint })}
      />
    )
    : (
      <>
        {paused && <Text size="xs" c="dimmed" px="xs" pb={4} data-testid="live-paused">{t("requests.livePaused")}
        </Text>}
        <RequestTable records={rows} admin={admin} onOpen={setOpen} />
        {records.hasNextPage && (
          <Group justify="center" p="sm">
            <Button variant="light" loading={records.isFetchingNextPage} onClick={() => void records.fetchNextPage()}>
              {t("common.loadMore")}
            </Button>
          </Group>
        )}
        <RequestDetail record={opened} onClose={() => setOpen(undefined)} />
      </>
    )
}

/** The filters of the request log, as chosen. @category models */
export interface RequestFilter {
  readonly requestId: string
  readonly period: Period
  readonly status: Contract.StatusClass | null
  readonly errorCode: string | null
  readonly model: string | null
  readonly keyId: string | null
  readonly userId: string | null
  readonly channel: string | null
}

/** The request log's query for the API (an admin's adds user and channel). @category filters */
export const requestQuery = (filter: RequestFilter, admin: boolean, now = Date.now()) => {
  const bounds = periodBounds(filter.period, now)
  const requestId = filter.requestId.trim()
  return {
    // A request id is looked for at any time: the period does not hide it.
    requestId: requestId === "" ? undefined : requestId,
    from: requestId === "" ? bounds.from : undefined,
    to: requestId === "" ? bounds.to : undefined,
    status: filter.status ?? undefined,
    errorCode: filter.errorCode ?? undefined,
    model: filter.model ?? undefined,
    keyId: filter.keyId ?? undefined,
    ...(admin ? { userId: filter.userId ?? undefined, channel: filter.channel ?? undefined } : {})
  }
}

/** The request log page. @category pages */
export function RequestsPage() {
  const { t } = useI18n()
  const { session } = useSession()
  const client = useQueryClient()
  const admin = session?.user.role === "admin"
  const [params] = useSearchParams()
  const [filter, setFilter] = useState<RequestFilter>(() => ({
    requestId: params.get("requestId") ?? "",
    period: last30,
    status: STATUSES.includes(params.get("status") as Contract.StatusClass)
      ? params.get("status") as Contract.StatusClass
      : null,
    errorCode: params.get("errorCode"),
    model: null,
    keyId: null,
    userId: params.get("userId"),
    channel: params.get("channel")
  }))
  const [live, setLive] = useState(true)
  const newest = useRef<string | undefined>(undefined)
  // Typing a request id searches once the typing pauses.
  const [requestId] = useDebouncedValue(filter.requestId, 300)
  const query = useMemo(
    () => requestQuery({ ...filter, requestId }, admin),
    // The period's bounds change with the day, not on every render.
    [
      requestId,
      filter.period,
      filter.status,
      filter.errorCode,
      filter.model,
      filter.keyId,
      filter.userId,
      filter.channel,
      admin
    ]
  )
  const keys = useQuery({
    queryKey: admin ? ["admin", "user", filter.userId, "keys"] : ["keys"],
    queryFn: () =>
      admin ? call((api) => api.keys.userKeys({ params: { id: filter.userId! } })) : call((api) => api.keys.list()),
    enabled: !admin || filter.userId !== null
  })
  const users = useQuery({
    queryKey: ["admin", "users"],
    queryFn: () => call((api) => api.users.list()),
    enabled: admin
  })
  const channels = useQuery({
    queryKey: ["admin", "channels"],
    queryFn: () => call((api) => api.catalog.listChannels()),
    enabled: admin
  })
  // The same queries (and cache entries) as the other pages read; only the ids are taken here.
  const adminModels = useQuery({
    queryKey: ["admin", "models"],
    queryFn: () => call((api) => api.catalog.listModels()),
    select: (list) => list.data.map((m) => m.id),
    enabled: admin
  })
  const myModels = useQuery({
    queryKey: ["my-models"],
    queryFn: () => call((api) => api.account.models()),
    select: (list) => [...new Set(list.groups.flatMap((g) => g.models.map((m) => m.id)))],
    enabled: !admin
  })
  const models = admin ? adminModels : myModels
  const set = (next: Partial<RequestFilter>) => setFilter({ ...filter, ...next })
  const searching = query.requestId !== undefined
  const csv = admin ? urls.usage.adminCsv({ query }) : urls.usage.csv({ query })
  return (
    <>
      <PageHeader
        title={t("requests.title")}
        subtitle={admin ? t("requests.subtitleAdmin") : t("requests.subtitle")}
        actions={
          <Group gap="sm">
            <Tooltip label={t("requests.liveHint")}>
              <Switch
                label={t("requests.live")}
                checked={live}
                onChange={(e) => setLive(e.currentTarget.checked)}
                data-testid="live-switch"
              />
            </Tooltip>
            <Button
              component="a"
              href={csv}
              download={admin ? "requests.csv" : "usage.csv"}
              variant="default"
              leftSection={<IconDownload size={16} />}
            >
              {t("common.exportCsv")}
            </Button>
          </Group>
        }
      />
      <Stack gap="xs" mb="md">
        <TextInput
          aria-label={t("requests.searchLabel")}
          placeholder={t("requests.search")}
          leftSection={<IconSearch size={16} />}
          ff="monospace"
          value={filter.requestId}
          onChange={(e) => set({ requestId: e.currentTarget.value })}
          maw={520}
          data-testid="request-search"
        />
        <Group align="flex-start" wrap="wrap" gap="xs">
          <PeriodFilter value={filter.period} onChange={(period) => set({ period })} />
          <Select
            label={t("requests.status")}
            placeholder={t("common.all")}
            clearable
            data={STATUSES.map((s) => ({ value: s, label: t(`requests.status.${s}` as MessageKey) }))}
            value={filter.status}
            onChange={(status) => set({ status: status as Contract.StatusClass | null })}
            w={230}
          />
          <Select
            label={t("requests.errorCode")}
            placeholder={t("common.all")}
            clearable
            searchable
            data={[...ERROR_CODES]}
            value={filter.errorCode}
            onChange={(errorCode) => set({ errorCode })}
            w={210}
          />
          <ModelFilter models={models.data ?? []} value={filter.model} onChange={(model) => set({ model })} />
          {admin && (
            <>
              <Select
                label={t("requests.user")}
                placeholder={t("common.all")}
                clearable
                searchable
                data={(users.data?.data ?? []).map((u) => ({ value: u.id, label: u.name }))}
                value={filter.userId}
                onChange={(userId) => set({ userId, keyId: null })}
                w={180}
              />
              <Select
                label={t("requests.channel")}
                placeholder={t("common.all")}
                clearable
                searchable
                data={(channels.data?.data ?? []).map((c) => c.name)}
                value={filter.channel}
                onChange={(channel) => set({ channel })}
                w={180}
              />
            </>
          )}
          {(!admin || filter.userId !== null) && (
            <Select
              label={t("requests.key")}
              placeholder={t("common.all")}
              clearable
              data={(keys.data?.data ?? []).map((k) => ({ value: k.id, label: k.name }))}
              value={filter.keyId}
              onChange={(keyId) => set({ keyId })}
              w={180}
            />
          )}
        </Group>
      </Stack>
      <Paper withBorder radius="md" p="xs">
        <RequestList
          queryKey={[admin ? "admin-requests" : "requests", query]}
          load={async (cursor) => {
            const page = await call((api) =>
              admin
                ? api.usage.adminList({ query: { ...query, limit: 50, cursor } })
                : api.usage.list({ query: { ...query, limit: 50, cursor } })
            )
            // New calls mean new spending: the header's balance is read again to match.
            if (cursor === undefined && !admin && page.data[0]?.id !== newest.current) {
              newest.current = page.data[0]?.id
              void client.invalidateQueries({ queryKey: sessionKey })
            }
            return page
          }}
          admin={admin}
          live={live}
          {...(searching
            ? { emptyTitle: t("requests.notFound", { id: query.requestId ?? "" }) }
            : { emptyHint: t("requests.emptyHint") })}
        />
      </Paper>
    </>
  )
}

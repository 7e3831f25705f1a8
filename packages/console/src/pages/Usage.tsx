/**
 * Usage and billing: request records filtered by key, model and period (with
 * CSV export), the balance history, and redeeming a code.
 *
 * @since 0.1.0
 */
import { Alert, Badge, Button, Group, Paper, Select, Stack, Table, Tabs, Text, TextInput } from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconDownload, IconReceipt, IconTicket } from "@tabler/icons-react"
import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query"
import { useMemo, useState } from "react"
import { useSearchParams } from "react-router"
import { PageHeader } from "../components/Bits.tsx"
import { last30, type Period, PeriodFilter, periodBounds } from "../components/Period.tsx"
import { EmptyState, ErrorState, errorMessage, Loading } from "../components/States.tsx"
import { call, type Contract, urls } from "../lib/api.ts"
import { Contract as C } from "../lib/contract.ts"
import { dateTime, tokens, usd } from "../lib/format.ts"
import { Usd } from "../components/Usd.tsx"
import { type MessageKey, useI18n } from "../lib/i18n.tsx"
import { WideTable } from "../components/WideTable.tsx"
import { sessionKey } from "../lib/session.tsx"
import { useForm } from "../lib/useForm.ts"

export { rangeStart } from "../components/Period.tsx"

/**
 * A table of usage records.
 *
 * @category components
 */
export function UsageTable({ records, showUser = false }: { readonly records: ReadonlyArray<Contract.UsageItem>; readonly showUser?: boolean }) {
  const { t, locale } = useI18n()
  return (
    <WideTable minWidth={720}>
      <Table verticalSpacing="xs" striped data-testid="usage-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("usage.time")}</Table.Th>
            {showUser && <Table.Th>{t("admin.overview.user")}</Table.Th>}
            <Table.Th>{t("usage.key")}</Table.Th>
            <Table.Th>{t("usage.model")}</Table.Th>
            <Table.Th ta="right">{t("usage.tokens")}</Table.Th>
            <Table.Th ta="right">{t("usage.cost")}</Table.Th>
            <Table.Th ta="right">{t("usage.latency")}</Table.Th>
            <Table.Th>{t("usage.status")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {records.map((r) => (
            <Table.Tr key={r.id}>
              <Table.Td><Text size="sm">{dateTime(r.createdAt, locale)}</Text></Table.Td>
              {showUser && <Table.Td><Text size="sm">{r.userName}</Text></Table.Td>}
              <Table.Td><Text size="sm">{r.keyName ?? r.keyId}</Text></Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  <Text size="sm" ff="monospace">{r.model}</Text>
                  {r.stream && <Badge size="xs" variant="light">stream</Badge>}
                </Group>
              </Table.Td>
              <Table.Td ta="right"><Text size="sm">{tokens(r.promptTokens)} / {tokens(r.completionTokens)}</Text></Table.Td>
              <Table.Td ta="right"><Text size="sm" ff="monospace"><Usd amount={r.cost} /></Text></Table.Td>
              <Table.Td ta="right"><Text size="sm">{r.latencyMs} ms</Text></Table.Td>
              <Table.Td>
                <Badge color={r.status < 400 ? "teal" : "red"} variant="light">{r.errorCode ?? r.status}</Badge>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </WideTable>
  )
}

/**
 * A page of usage records with "Load more": loading, error (with retry) and
 * empty states, and the table. `load` fetches the page after `cursor`.
 *
 * @category components
 */
export function PagedUsage({ queryKey, load, showUser = false, emptyHint }: {
  readonly queryKey: ReadonlyArray<unknown>
  readonly load: (cursor: string | undefined) => Promise<Contract.UsagePage>
  readonly showUser?: boolean
  readonly emptyHint?: string
}) {
  const { t } = useI18n()
  const records = useInfiniteQuery({
    queryKey,
    queryFn: ({ pageParam }) => load(pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined
  })
  const rows = records.data?.pages.flatMap((p) => p.data) ?? []
  return records.isPending
    ? <Loading />
    : records.error
    ? <ErrorState error={records.error} onRetry={() => void records.refetch()} />
    : rows.length === 0
    ? <EmptyState icon={<IconReceipt size={28} />} title={t("usage.empty")} {...(emptyHint === undefined ? {} : { hint: emptyHint })} />
    : (
      <>
        <UsageTable records={rows} showUser={showUser} />
        {records.hasNextPage && (
          <Group justify="center" p="sm">
            <Button variant="light" loading={records.isFetchingNextPage} onClick={() => void records.fetchNextPage()}>{t("common.loadMore")}</Button>
          </Group>
        )}
      </>
    )
}

/** The model filter of the usage pages (clearable: no model is every model). @category components */
export function ModelFilter({ models, value, onChange }: {
  readonly models: ReadonlyArray<string>
  readonly value: string | null
  readonly onChange: (model: string | null) => void
}) {
  const { t } = useI18n()
  return (
    <Select
      label={t("usage.filterModel")}
      placeholder={t("common.all")}
      clearable
      searchable
      data={models}
      value={value}
      onChange={onChange}
      w={220}
    />
  )
}

/** The usage filters: key, model and period. @category models */
export interface UsageFilter {
  readonly keyId: string | null
  readonly model: string | null
  readonly period: Period
}

function Records() {
  const { t } = useI18n()
  const client = useQueryClient()
  const [filter, setFilter] = useState<UsageFilter>({ keyId: null, model: null, period: last30 })
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => call((api) => api.keys.list()) })
  const models = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  const bounds = periodBounds(filter.period)
  const query = useMemo(() => ({
    keyId: filter.keyId ?? undefined,
    model: filter.model ?? undefined,
    from: bounds.from,
    to: bounds.to
  }), [filter.keyId, filter.model, bounds.from, bounds.to])
  const modelIds = [...new Set(models.data?.groups.flatMap((g) => g.models.map((m) => m.id)) ?? [])]
  return (
    <Stack>
      <Group align="flex-start" wrap="wrap" gap="xs">
        <Select
          label={t("usage.filterKey")}
          placeholder={t("common.all")}
          clearable
          data={(keys.data?.data ?? []).map((k) => ({ value: k.id, label: k.name }))}
          value={filter.keyId}
          onChange={(keyId) => setFilter({ ...filter, keyId })}
          w={200}
        />
        <ModelFilter models={modelIds} value={filter.model} onChange={(model) => setFilter({ ...filter, model })} />
        <PeriodFilter value={filter.period} onChange={(period) => setFilter({ ...filter, period })} />
        <Button
          component="a"
          href={urls.usage.csv({ query })}
          download="usage.csv"
          variant="default"
          mt={25}
          leftSection={<IconDownload size={16} />}
        >
          {t("common.exportCsv")}
        </Button>
      </Group>
      <Paper withBorder radius="md" p="xs">
        <PagedUsage
          queryKey={["usage", query]}
          load={async (cursor) => {
            const page = await call((api) => api.usage.list({ query: { ...query, limit: 50, cursor } }))
            // Fresh records mean fresh spending: the header's balance is read again to match.
            if (cursor === undefined) void client.invalidateQueries({ queryKey: sessionKey })
            return page
          }}
          emptyHint={t("usage.emptyHint")}
        />
      </Paper>
    </Stack>
  )
}

/**
 * A table of ledger entries.
 *
 * @category components
 */
export function LedgerTable({ entries }: { readonly entries: ReadonlyArray<Contract.LedgerItem> }) {
  const { t, locale } = useI18n()
  return (
    <WideTable minWidth={560}>
      <Table verticalSpacing="xs" striped data-testid="ledger-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("usage.time")}</Table.Th>
            <Table.Th>{t("usage.kind")}</Table.Th>
            <Table.Th ta="right">{t("usage.amount")}</Table.Th>
            <Table.Th>{t("usage.reason")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {entries.map((e) => (
            <Table.Tr key={e.id}>
              <Table.Td><Text size="sm">{dateTime(e.createdAt, locale)}</Text></Table.Td>
              <Table.Td><Badge variant="light" color={e.amount.startsWith("-") ? "orange" : "teal"}>{t(`usage.kind.${e.kind}` as MessageKey)}</Badge></Table.Td>
              <Table.Td ta="right"><Text size="sm" ff="monospace" c={e.amount.startsWith("-") ? "dimmed" : "teal"}>{e.amount.startsWith("-") ? "" : "+"}{usd(e.amount)}</Text></Table.Td>
              <Table.Td><Text size="sm" c="dimmed">{e.reason ?? e.requestId ?? ""}</Text></Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </WideTable>
  )
}

/**
 * Ledger entries with "Load more", and their loading, error and empty states.
 *
 * @category components
 */
export function PagedLedger({ queryKey, load }: {
  readonly queryKey: ReadonlyArray<unknown>
  readonly load: (cursor: string | undefined) => Promise<Contract.LedgerPage>
}) {
  const { t } = useI18n()
  const ledger = useInfiniteQuery({
    queryKey,
    queryFn: ({ pageParam }) => load(pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined
  })
  const rows = ledger.data?.pages.flatMap((p) => p.data) ?? []
  return ledger.isPending
    ? <Loading />
    : ledger.error
    ? <ErrorState error={ledger.error} onRetry={() => void ledger.refetch()} />
    : rows.length === 0
    ? <EmptyState title={t("usage.ledgerEmpty")} />
    : (
      <>
        <LedgerTable entries={rows} />
        {ledger.hasNextPage && (
          <Group justify="center" p="sm">
            <Button variant="light" loading={ledger.isFetchingNextPage} onClick={() => void ledger.fetchNextPage()}>{t("common.loadMore")}</Button>
          </Group>
        )}
      </>
    )
}

function Ledger() {
  return (
    <Paper withBorder radius="md" p="xs">
      <PagedLedger queryKey={["ledger"]} load={(cursor) => call((api) => api.usage.ledger({ query: { limit: 50, cursor } }))} />
    </Paper>
  )
}

/** The redeem-a-code form. @category components */
export function RedeemForm() {
  const { t } = useI18n()
  const client = useQueryClient()
  const [result, setResult] = useState<Contract.RedeemResult | undefined>(undefined)
  const form = useForm({
    initial: { code: "" },
    schema: C.RedeemRequest,
    toRequest: (v) => ({ code: v.code.trim() }),
    onSubmit: async (body) => {
      const redeemed = await call((api) => api.account.redeem({ payload: body }))
      setResult(redeemed)
      form.reset()
      notifications.show({ color: "teal", message: t("usage.redeemed", { amount: usd(redeemed.amount), balance: usd(redeemed.balance) }) })
      await client.invalidateQueries()
    }
  })
  return (
    <Paper withBorder radius="md" p="lg" maw={520} data-testid="redeem-form">
      <form onSubmit={(e) => void form.submit(e)} noValidate>
        <Stack>
          <Text size="sm" c="dimmed">{t("usage.redeemHint")}</Text>
          {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
          {result && (
            <Alert color="teal" data-testid="redeem-result">
              {t("usage.redeemed", { amount: usd(result.amount), balance: usd(result.balance) })}
            </Alert>
          )}
          <TextInput label={t("usage.code")} placeholder={t("usage.codePlaceholder")} ff="monospace" {...form.field("code")} />
          <Group><Button type="submit" loading={form.submitting} leftSection={<IconTicket size={16} />}>{t("usage.redeemSubmit")}</Button></Group>
        </Stack>
      </form>
    </Paper>
  )
}

/** The usage page. @category pages */
export function UsagePage() {
  const { t } = useI18n()
  const [params, setParams] = useSearchParams()
  const tab = params.get("tab") ?? "records"
  return (
    <>
      <PageHeader title={t("usage.title")} />
      <Tabs value={tab} onChange={(value) => setParams(value === "records" || value === null ? {} : { tab: value })} keepMounted={false}>
        <Tabs.List mb="md">
          <Tabs.Tab value="records">{t("usage.records")}</Tabs.Tab>
          <Tabs.Tab value="ledger">{t("usage.ledger")}</Tabs.Tab>
          <Tabs.Tab value="redeem">{t("usage.redeem")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="records"><Records /></Tabs.Panel>
        <Tabs.Panel value="ledger"><Ledger /></Tabs.Panel>
        <Tabs.Panel value="redeem"><RedeemForm /></Tabs.Panel>
      </Tabs>
    </>
  )
}

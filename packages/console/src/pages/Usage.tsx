/**
 * Billing: the balance history and redeeming a code. (Calls are on the
 * Requests page; `?tab=records`, where they used to be, leads there.)
 *
 * @since 0.1.0
 */
import { Alert, Badge, Button, Group, Paper, Select, Stack, Table, Tabs, Text, TextInput } from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconListSearch, IconTicket } from "@tabler/icons-react"
import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { Link, Navigate, useSearchParams } from "react-router"
import { PageHeader } from "../components/Bits.tsx"
import { EmptyState, errorMessage, ErrorState, Loading } from "../components/States.tsx"
import { WideTable } from "../components/WideTable.tsx"
import { call, type Contract } from "../lib/api.ts"
import { Contract as C } from "../lib/contract.ts"
import { dateTime, usd } from "../lib/format.ts"
import { type MessageKey, useI18n } from "../lib/i18n.tsx"
import { useForm } from "../lib/useForm.ts"

export { rangeStart } from "../components/Period.tsx"

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
              <Table.Td>
                <Text size="sm">{dateTime(e.createdAt, locale)}</Text>
              </Table.Td>
              <Table.Td>
                <Badge variant="light" color={e.amount.startsWith("-") ? "orange" : "teal"}>
                  {t(`usage.kind.${e.kind}` as MessageKey)}
                </Badge>
              </Table.Td>
              <Table.Td ta="right">
                <Text size="sm" ff="monospace" c={e.amount.startsWith("-") ? "dimmed" : "teal"}>
                  {e.amount.startsWith("-") ? "" : "+"}
                  {usd(e.amount)}
                </Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm" c="dimmed">{e.reason ?? e.requestId ?? ""}</Text>
              </Table.Td>
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
            <Button variant="light" loading={ledger.isFetchingNextPage} onClick={() => void ledger.fetchNextPage()}>
              {t("common.loadMore")}
            </Button>
          </Group>
        )}
      </>
    )
}

function Ledger() {
  return (
    <Paper withBorder radius="md" p="xs">
      <PagedLedger
        queryKey={["ledger"]}
        load={(cursor) => call((api) => api.usage.ledger({ query: { limit: 50, cursor } }))}
      />
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
      notifications.show({
        color: "teal",
        message: t("usage.redeemed", { amount: usd(redeemed.amount), balance: usd(redeemed.balance) })
      })
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
          <TextInput
            label={t("usage.code")}
            placeholder={t("usage.codePlaceholder")}
            ff="monospace"
            {...form.field("code")}
          />
          <Group>
            <Button type="submit" loading={form.submitting} leftSection={<IconTicket size={16} />}>
              {t("usage.redeemSubmit")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  )
}

/** The billing page. @category pages */
export function UsagePage() {
  const { t } = useI18n()
  const [params, setParams] = useSearchParams()
  const tab = params.get("tab") ?? "ledger"
  if (tab === "records") return <Navigate to="/requests" replace />
  return (
    <>
      <PageHeader
        title={t("usage.title")}
        actions={
          <Button component={Link} to="/requests" variant="default" leftSection={<IconListSearch size={16} />}>
            {t("requests.showAll")}
          </Button>
        }
      />
      <Tabs
        value={tab}
        onChange={(value) => setParams(value === "ledger" || value === null ? {} : { tab: value })}
        keepMounted={false}
      >
        <Tabs.List mb="md">
          <Tabs.Tab value="ledger">{t("usage.ledger")}</Tabs.Tab>
          <Tabs.Tab value="redeem">{t("usage.redeem")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="ledger">
          <Ledger />
        </Tabs.Panel>
        <Tabs.Panel value="redeem">
          <RedeemForm />
        </Tabs.Panel>
      </Tabs>
    </>
  )
}

/**
 * The usage overview across users, filtered by period, user and model: spend
 * and tokens per day and model, the top users, and the matching requests.
 *
 * @since 0.1.0
 */
import { DonutChart } from "@mantine/charts"
import { Button, Grid, Group, Paper, Select, SimpleGrid, Stack, Table, Text } from "@mantine/core"
import { useReducedMotion } from "@mantine/hooks"
import { useQuery } from "@tanstack/react-query"
import { useMemo, useState } from "react"
import { Link } from "react-router"
import { PageHeader, StatCard } from "../../components/Bits.tsx"
import { last30, type Period, periodBounds, PeriodFilter } from "../../components/Period.tsx"
import { EmptyState, QueryState } from "../../components/States.tsx"
import { Usd } from "../../components/Usd.tsx"
import { call } from "../../lib/api.ts"
import { tokens } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { money, palette, pivotRange, SpendChart, TokensChart } from "../Dashboard.tsx"
import { RequestList } from "../Requests.tsx"
import { ModelFilter } from "../Usage.tsx"

const DAY = 86_400_000

/** The overview's filters. @category models */
export interface OverviewFilter {
  readonly period: Period
  readonly userId: string | null
  readonly model: string | null
}

/** The overview page. @category pages */
export function AdminOverviewPage() {
  const { t } = useI18n()
  const [filter, setFilter] = useState<OverviewFilter>({ period: last30, userId: null, model: null })
  const users = useQuery({ queryKey: ["admin", "users"], queryFn: () => call((api) => api.users.list()) })
  const models = useQuery({ queryKey: ["admin", "models"], queryFn: () => call((api) => api.catalog.listModels()) })
  const bounds = periodBounds(filter.period)
  const query = useMemo(() => ({
    // "All time" asks from the epoch: without `from` the server answers the last 30 days.
    from: filter.period.range === "all" ? 0 : bounds.from,
    to: bounds.to,
    userId: filter.userId ?? undefined,
    model: filter.model ?? undefined
  }), [filter.period.range, bounds.from, bounds.to, filter.userId, filter.model])
  const animate = !useReducedMotion()
  const overview = useQuery({
    queryKey: ["admin", "overview", query],
    queryFn: () => call((api) => api.usage.adminDaily({ query }))
  })
  return (
    <>
      <PageHeader title={t("admin.overview.title")} />
      <Group align="flex-start" wrap="wrap" gap="xs" mb="lg">
        <PeriodFilter value={filter.period} onChange={(period) => setFilter({ ...filter, period })} />
        <Select
          label={t("admin.overview.user")}
          placeholder={t("common.all")}
          clearable
          searchable
          data={(users.data?.data ?? []).map((u) => ({ value: u.id, label: u.name }))}
          value={filter.userId}
          onChange={(userId) => setFilter({ ...filter, userId })}
          w={200}
        />
        <ModelFilter
          models={(models.data?.data ?? []).map((m) => m.id)}
          value={filter.model}
          onChange={(model) => setFilter({ ...filter, model })}
        />
      </Group>
      <QueryState query={overview}>
        {(data) => {
          const now = Date.now()
          const firstDay = data.daily.reduce(
            (min, p) => Math.min(min, Date.parse(`${p.day}T00:00:00Z`)),
            Math.floor(now / DAY) * DAY
          )
          const from = query.from === undefined || query.from === 0 ? firstDay : query.from
          const to = query.to ?? Math.floor(now / DAY) * DAY + DAY
          const spend = pivotRange(data.daily, (p) => Number(p.cost), from, to)
          const tokenChart = pivotRange(data.daily, (p) => p.promptTokens + p.completionTokens, from, to)
          const totalTokens = data.daily.reduce((sum, p) => sum + p.promptTokens + p.completionTokens, 0)
          return (
            <Stack gap="lg">
              <SimpleGrid cols={{ base: 1, xs: 3 }}>
                <StatCard
                  label={t("admin.overview.totalCost")}
                  value={<Usd amount={data.totalCost} />}
                  testId="overview-cost"
                />
                <StatCard
                  label={t("admin.overview.totalRequests")}
                  value={data.totalRequests.toLocaleString()}
                  testId="overview-requests"
                />
                <StatCard
                  label={t("admin.overview.totalTokens")}
                  value={tokens(totalTokens)}
                  testId="overview-tokens"
                />
              </SimpleGrid>
              {data.daily.length === 0
                ? (
                  <Paper withBorder radius="md">
                    <EmptyState title={t("dashboard.noUsage")} />
                  </Paper>
                )
                : (
                  <Grid>
                    <Grid.Col span={{ base: 12, lg: 8 }}>
                      <Stack>
                        <SpendChart title={t("admin.overview.spendChart")} data={spend} animate={animate} />
                        <TokensChart title={t("dashboard.tokensChart")} data={tokenChart} animate={animate} />
                      </Stack>
                    </Grid.Col>
                    <Grid.Col span={{ base: 12, lg: 4 }}>
                      <Paper withBorder p="md" radius="md">
                        <Text fw={600} mb="md">{t("admin.overview.topUsers")}</Text>
                        <DonutChart
                          mx="auto"
                          size={160}
                          thickness={24}
                          data={data.users.slice(0, 8).map((u, i) => ({
                            name: u.userName,
                            value: Number(u.cost),
                            color: palette[i % palette.length]!
                          }))}
                          valueFormatter={money}
                          pieProps={{ isAnimationActive: animate }}
                        />
                        <Table mt="md" verticalSpacing={4} data-testid="top-users">
                          <Table.Tbody>
                            {data.users.slice(0, 8).map((u) => (
                              <Table.Tr key={u.userId}>
                                <Table.Td>
                                  <Text size="sm">{u.userName}</Text>
                                </Table.Td>
                                <Table.Td ta="right">
                                  <Text size="xs" c="dimmed">{tokens(u.tokens)}</Text>
                                </Table.Td>
                                <Table.Td ta="right">
                                  <Text size="sm" ff="monospace">
                                    <Usd amount={u.cost} />
                                  </Text>
                                </Table.Td>
                              </Table.Tr>
                            ))}
                          </Table.Tbody>
                        </Table>
                      </Paper>
                    </Grid.Col>
                  </Grid>
                )}
            </Stack>
          )
        }}
      </QueryState>
      <Group justify="space-between" mt="xl" mb="sm">
        <Text fw={600}>{t("admin.overview.recent")}</Text>
        <Button component={Link} to="/requests" variant="subtle" size="xs">{t("requests.showAll")}</Button>
      </Group>
      <Paper withBorder radius="md" p="xs">
        <RequestList
          queryKey={["admin", "usage", query]}
          load={(cursor) => call((api) => api.usage.adminList({ query: { ...query, limit: 20, cursor } }))}
          admin
          live={false}
        />
      </Paper>
    </>
  )
}

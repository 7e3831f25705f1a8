/**
 * The usage overview across users: spend per day and model, the top users,
 * and the latest requests.
 *
 * @since 0.1.0
 */
import { BarChart, DonutChart } from "@mantine/charts"
import { Paper, SimpleGrid, Stack, Table, Text } from "@mantine/core"
import { useQuery } from "@tanstack/react-query"
import { PageHeader, StatCard } from "../../components/Bits.tsx"
import { EmptyState, QueryState } from "../../components/States.tsx"
import { call, Endpoints } from "../../lib/api.ts"
import { tokens, usd } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { money, pivot } from "../Dashboard.tsx"
import { UsageTable } from "../Usage.tsx"

const palette = ["indigo.6", "cyan.6", "teal.6", "grape.6", "orange.6", "pink.6", "lime.6", "blue.6"]

/** The overview page. @category pages */
export function AdminOverviewPage() {
  const { t } = useI18n()
  const overview = useQuery({ queryKey: ["admin", "overview"], queryFn: () => call(Endpoints.adminUsageDaily) })
  const recent = useQuery({ queryKey: ["admin", "usage"], queryFn: () => call(Endpoints.adminUsage, { query: { limit: 20 } }) })
  return (
    <>
      <PageHeader title={t("admin.overview.title")} />
      <QueryState query={overview}>
        {(data) => {
          const spend = pivot(data.daily, (p) => Number(p.cost))
          return (
            <Stack gap="lg">
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <StatCard label={t("admin.overview.totalCost")} value={usd(data.totalCost)} />
                <StatCard label={t("admin.overview.totalRequests")} value={data.totalRequests.toLocaleString()} />
              </SimpleGrid>
              {data.daily.length === 0
                ? <Paper withBorder radius="md"><EmptyState title={t("dashboard.noUsage")} /></Paper>
                : (
                  <SimpleGrid cols={{ base: 1, lg: 3 }}>
                    <Paper withBorder p="md" radius="md" style={{ gridColumn: "span 2" }}>
                      <Text fw={600} mb="md">{t("dashboard.spendChart")}</Text>
                      <BarChart
                        h={280}
                        data={spend.rows}
                        dataKey="day"
                        type="stacked"
                        series={spend.models.map((name, i) => ({ name, label: name.replaceAll("_", "."), color: palette[i % palette.length]! }))}
                        valueFormatter={money}
                        withLegend
                        tickLine="none"
                      />
                    </Paper>
                    <Paper withBorder p="md" radius="md">
                      <Text fw={600} mb="md">{t("admin.overview.topUsers")}</Text>
                      <DonutChart
                        mx="auto"
                        size={160}
                        thickness={24}
                        data={data.users.slice(0, 8).map((u, i) => ({ name: u.userName, value: Number(u.cost), color: palette[i % palette.length]! }))}
                        valueFormatter={(v) => `$${v.toFixed(2)}`}
                      />
                      <Table mt="md" verticalSpacing={4}>
                        <Table.Tbody>
                          {data.users.slice(0, 8).map((u) => (
                            <Table.Tr key={u.userId}>
                              <Table.Td><Text size="sm">{u.userName}</Text></Table.Td>
                              <Table.Td ta="right"><Text size="xs" c="dimmed">{tokens(u.tokens)}</Text></Table.Td>
                              <Table.Td ta="right"><Text size="sm" ff="monospace">{usd(u.cost)}</Text></Table.Td>
                            </Table.Tr>
                          ))}
                        </Table.Tbody>
                      </Table>
                    </Paper>
                  </SimpleGrid>
                )}
            </Stack>
          )
        }}
      </QueryState>
      <Text fw={600} mt="xl" mb="sm">{t("admin.overview.recent")}</Text>
      <Paper withBorder radius="md" p="xs">
        <QueryState query={recent}>
          {(data) => data.data.length === 0 ? <EmptyState title={t("usage.empty")} /> : <UsageTable records={data.data} showUser />}
        </QueryState>
      </Paper>
    </>
  )
}

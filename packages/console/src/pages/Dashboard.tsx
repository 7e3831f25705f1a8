/**
 * The dashboard: balance, spend today and this month, and 30 days of spend
 * and tokens per model.
 *
 * @since 0.1.0
 */
import { AreaChart, BarChart } from "@mantine/charts"
import { Button, Group, Paper, SimpleGrid, Text, ThemeIcon } from "@mantine/core"
import { useReducedMotion } from "@mantine/hooks"
import { IconActivity, IconCalendarMonth, IconCoin, IconReceipt2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import { Link } from "react-router"
import { PageHeader, StatCard } from "../components/Bits.tsx"
import { EmptyState, QueryState } from "../components/States.tsx"
import { Usd } from "../components/Usd.tsx"
import { call, type Contract } from "../lib/api.ts"
import { tokens } from "../lib/format.ts"
import { useI18n } from "../lib/i18n.tsx"
import { useSyncBalance } from "../lib/session.tsx"
import { HoldWarning } from "./Models.tsx"

/** The charts' colours, one per model in turn. @category charts */
export const palette = ["indigo.6", "cyan.6", "teal.6", "grape.6", "orange.6", "pink.6", "lime.6", "blue.6"]

/** Chart series for pivoted model columns, labelled with the real model ids. @category charts */
export const chartSeries = (models: ReadonlyArray<string>) =>
  models.map((name, i) => ({ name, label: name.replaceAll("_", "."), color: palette[i % palette.length]! }))

const DAY = 86_400_000

/**
 * Pivots per-day-and-model points into one row per day with a column per
 * model (what the charts take), filling every UTC day from `from` (inclusive)
 * to `to` (exclusive), both epoch ms.
 *
 * @category charts
 */
export const pivotRange = (
  points: ReadonlyArray<Contract.DailyPoint>,
  value: (point: Contract.DailyPoint) => number,
  from: number,
  to: number
): { rows: Array<Record<string, string | number>>; models: Array<string> } => {
  // Chart keys may not contain dots (recharts reads them as paths), so "gemini-2.5-flash" is keyed "gemini-2_5-flash".
  // A model with nothing to show (only refused calls: no cost, no tokens) gets no series: it would list a model
  // that was never served and stack its dot at the day's total.
  const models = [...new Set(points.filter((p) => value(p) > 0).map((p) => p.model.replaceAll(".", "_")))].sort()
  const byDay = new Map<string, Record<string, string | number>>()
  const first = Math.floor(from / DAY) * DAY
  const years = new Set<string>()
  for (let at = first; at < to; at += DAY) years.add(new Date(at).toISOString().slice(0, 4))
  for (let at = first; at < to; at += DAY) {
    const day = new Date(at).toISOString().slice(0, 10)
    // Days read MM-DD while the window stays within one year.
    byDay.set(day, { day: years.size > 1 ? day : day.slice(5), ...Object.fromEntries(models.map((m) => [m, 0])) })
  }
  for (const point of points) {
    const row = byDay.get(point.day)
    const key = point.model.replaceAll(".", "_")
    if (row !== undefined && models.includes(key)) row[key] = Number(row[key] ?? 0) + value(point)
  }
  return { rows: [...byDay.values()], models }
}

/**
 * `pivotRange` over the `days` UTC days that end with `today`.
 *
 * @category charts
 */
export const pivot = (
  points: ReadonlyArray<Contract.DailyPoint>,
  value: (point: Contract.DailyPoint) => number,
  days = 30,
  today = new Date()
): { rows: Array<Record<string, string | number>>; models: Array<string> } => {
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()) + DAY
  return pivotRange(points, value, end - days * DAY, end)
}

/**
 * A chart amount (axis ticks, tooltips): two decimals from a dollar up, two
 * significant digits below (so ticks 0.005 apart never read the same).
 *
 * @category charts
 */
export const money = (v: number): string =>
  v === 0 ? "$0" : Math.abs(v) >= 1 ? `$${v.toFixed(2)}` : `$${twoDigits.format(v)}`

const twoDigits = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 2 })

/** What the usage charts take: pivoted rows and their model columns (`pivotRange`). @category charts */
export interface UsageChartProps {
  readonly title: string
  readonly data: { readonly rows: Array<Record<string, string | number>>; readonly models: ReadonlyArray<string> }
  readonly animate: boolean
}

/** Spend per day, stacked by model. @category charts */
export function SpendChart({ title, data, animate }: UsageChartProps) {
  return (
    <Paper withBorder p="md" radius="md">
      <Text fw={600} mb="md">{title}</Text>
      <BarChart
        h={260}
        data={data.rows}
        dataKey="day"
        type="stacked"
        series={chartSeries(data.models)}
        valueFormatter={money}
        barProps={{ isAnimationActive: animate }}
        withLegend
        tickLine="none"
      />
    </Paper>
  )
}

/** Tokens per day, stacked by model. @category charts */
export function TokensChart({ title, data, animate }: UsageChartProps) {
  return (
    <Paper withBorder p="md" radius="md">
      <Text fw={600} mb="md">{title}</Text>
      <AreaChart
        h={260}
        data={data.rows}
        dataKey="day"
        type="stacked"
        series={chartSeries(data.models)}
        valueFormatter={(v) => tokens(v)}
        areaProps={{ isAnimationActive: animate }}
        withLegend
        curveType="monotone"
        tickLine="none"
      />
    </Paper>
  )
}

/** The dashboard page. @category pages */
export function DashboardPage() {
  const { t } = useI18n()
  const query = useQuery({
    queryKey: ["dashboard"],
    queryFn: () => call((api) => api.account.dashboard()),
    refetchOnWindowFocus: "always"
  })
  const models = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  useSyncBalance(query.data?.balance)
  const animate = !useReducedMotion()
  return (
    <>
      <PageHeader
        title={t("dashboard.title")}
        actions={<Button component={Link} to="/keys" variant="light">{t("dashboard.createKey")}</Button>}
      />
      <QueryState query={query}>
        {(data) => {
          const spend = pivot(data.daily, (p) => Number(p.cost))
          const tokenChart = pivot(data.daily, (p) => p.promptTokens + p.completionTokens)
          return (
            <>
              <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} mb="lg">
                <StatCard
                  label={t("dashboard.balance")}
                  value={<Usd amount={data.balance} />}
                  testId="balance"
                  icon={
                    <ThemeIcon variant="light" size="lg" radius="md">
                      <IconCoin size={20} />
                    </ThemeIcon>
                  }
                />
                <StatCard
                  label={t("dashboard.spentToday")}
                  value={<Usd amount={data.spentToday} />}
                  testId="spent-today"
                  icon={
                    <ThemeIcon variant="light" color="orange" size="lg" radius="md">
                      <IconReceipt2 size={20} />
                    </ThemeIcon>
                  }
                />
                <StatCard
                  label={t("dashboard.spentMonth")}
                  value={<Usd amount={data.spentThisMonth} />}
                  icon={
                    <ThemeIcon variant="light" color="grape" size="lg" radius="md">
                      <IconCalendarMonth size={20} />
                    </ThemeIcon>
                  }
                />
                <StatCard
                  label={t("dashboard.requestsToday")}
                  value={data.requestsToday.toLocaleString()}
                  hint={`${t("dashboard.tokensToday", { tokens: tokens(data.tokensToday) })} · ${
                    t("dashboard.activeKeys", { count: data.activeKeys })
                  }`}
                  testId="requests-today"
                  icon={
                    <ThemeIcon variant="light" color="teal" size="lg" radius="md">
                      <IconActivity size={20} />
                    </ThemeIcon>
                  }
                />
              </SimpleGrid>
              {models.data !== undefined && <HoldWarning balance={data.balance} groups={models.data.groups} />}
              {data.daily.length === 0
                ? (
                  <Paper withBorder radius="md">
                    <EmptyState
                      title={t("dashboard.noUsage")}
                      hint={t("dashboard.noUsageHint")}
                      action={
                        <Group>
                          <Button component={Link} to="/keys">{t("dashboard.createKey")}</Button>
                          <Button component={Link} to="/usage?tab=redeem" variant="default">
                            {t("dashboard.redeem")}
                          </Button>
                        </Group>
                      }
                    />
                  </Paper>
                )
                : (
                  <SimpleGrid cols={{ base: 1, lg: 2 }}>
                    <SpendChart title={t("dashboard.spendChart")} data={spend} animate={animate} />
                    <TokensChart title={t("dashboard.tokensChart")} data={tokenChart} animate={animate} />
                  </SimpleGrid>
                )}
            </>
          )
        }}
      </QueryState>
    </>
  )
}

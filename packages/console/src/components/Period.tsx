/**
 * The period filter of the usage pages: today, the last 7 or 30 days, all
 * time, or custom dates (UTC days, the same days the charts and the server's
 * daily totals use).
 *
 * @since 0.1.0
 */
import { Group, Select, TextInput } from "@mantine/core"
import { type MessageKey, useI18n } from "../lib/i18n.tsx"

const DAY = 86_400_000

/** A period choice: a preset, or custom `YYYY-MM-DD` days (both inclusive). @category models */
export interface Period {
  readonly range: "1" | "7" | "30" | "all" | "custom"
  readonly fromDay: string
  readonly toDay: string
}

/** The default period: the last 30 days. @category models */
export const last30: Period = { range: "30", fromDay: "", toDay: "" }

/** The start of a preset ("1", "7", "30" days back, or "all"), at a UTC midnight. @category filters */
export const rangeStart = (range: string, now = Date.now()): number | undefined => {
  if (range === "all" || range === "custom") return undefined
  const today = Math.floor(now / DAY) * DAY
  return today - (Number(range) - 1) * DAY
}

const dayStart = (day: string): number | undefined => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day)
  if (match === null) return undefined
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The bounds a period stands for: `from` inclusive and `to` exclusive (epoch
 * ms, as the API takes them), or the problem with custom dates.
 *
 * @category filters
 */
export const periodBounds = (
  period: Period,
  now = Date.now()
): { readonly from: number | undefined; readonly to: number | undefined; readonly problem?: MessageKey } => {
  if (period.range !== "custom") return { from: rangeStart(period.range, now), to: undefined }
  const from = dayStart(period.fromDay)
  const toStart = dayStart(period.toDay)
  const to = toStart === undefined ? undefined : toStart + DAY
  if (from !== undefined && to !== undefined && to <= from) {
    return { from: undefined, to: undefined, problem: "usage.rangeInvalid" }
  }
  return { from, to }
}

/** The period controls: a preset select, and two date fields for custom dates. @category components */
export function PeriodFilter(
  { value, onChange }: { readonly value: Period; readonly onChange: (period: Period) => void }
) {
  const { t } = useI18n()
  const bounds = periodBounds(value)
  return (
    <Group gap="xs" align="flex-start" wrap="wrap">
      <Select
        label={t("usage.filterRange")}
        allowDeselect={false}
        data={[
          { value: "1", label: t("usage.range1") },
          { value: "7", label: t("usage.range7") },
          { value: "30", label: t("usage.range30") },
          { value: "all", label: t("usage.rangeAll") },
          { value: "custom", label: t("usage.rangeCustom") }
        ]}
        value={value.range}
        onChange={(range) => onChange({ ...value, range: (range ?? "30") as Period["range"] })}
        w={170}
      />
      {value.range === "custom" && (
        <>
          <TextInput
            type="date"
            label={t("usage.from")}
            value={value.fromDay}
            onChange={(e) => onChange({ ...value, fromDay: e.currentTarget.value })}
            w={170}
          />
          <TextInput
            type="date"
            label={t("usage.to")}
            value={value.toDay}
            min={value.fromDay === "" ? undefined : value.fromDay}
            error={bounds.problem === undefined ? undefined : t(bounds.problem)}
            onChange={(e) => onChange({ ...value, toDay: e.currentTarget.value })}
            w={170}
          />
        </>
      )}
    </Group>
  )
}

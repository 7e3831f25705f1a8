/**
 * The run's time budget: the default durations of a full and a quick run,
 * and the plan of a run (each step's wall time, from the durations and the
 * targets that take part), printed before the run starts and checked by a
 * test against the issue's budget of 15 minutes on 2 cores.
 *
 * Full run, four targets (direct, floor, modelgate, Portkey), 1 s warm-up,
 * 3 s per open-loop rate and 3 s of closed loop per target and scenario:
 *
 * | step | per target | targets | wall |
 * |---|---|---|---|
 * | startup (processes, migrations) | | | 10 s |
 * | streams-1000 (10 s streams) | 12 s | 3 proxies | 36 s |
 * | chat-small (250, 500, 1,000/s) | 14 s | 4 | 56 s |
 * | chat-10k (250, 500/s) | 10.75 s | 4 | 43 s |
 * | stream-200 (50, 100/s) | 10.75 s | 4 | 43 s |
 * | translate-gemini (250, 1,000/s) | 10.75 s | 3 | 32 s |
 * | translate-gemini-stream (100/s) | 7.5 s | 3 | 22.5 s |
 * | tracing (off and sampled, 3 rounds) | 7 s | 6 gateways | 42 s |
 * | soak (modelgate, 300/s) | | 1 | 600 s + drain |
 * | stop, billing check, report | | | 10 s |
 *
 * About 14 min 13 s in all without the tracing step (issue 24), which adds
 * 24 s: over issue 8's 15 minutes with `chat-200k` (15 min 20 s). A target that cannot keep up with a rate adds
 * at most `drainMs` (3 s) per open-loop point; the plan does not assume it.
 *
 * @since 0.1.0
 */
import type { TargetName, Timing } from "./Runner.ts"
import type { Scenario } from "./Scenarios.ts"

/** The issue's budget for the whole `pnpm bench` run, seconds. @category constants */
export const BUDGET_SECONDS = 15 * 60

/** Durations of the full run (`pnpm bench`). @category constants */
export const FULL_TIMING: Timing = {
  warmupMs: 1000,
  pointMs: 3000,
  throughputMs: 3000,
  drainMs: 3000,
  soakMs: 600_000,
  soakRate: 300,
  sampleMs: 1000,
  rssSampleMs: 250
}

/** Durations of a smoke run (`--quick`). @category constants */
export const QUICK_TIMING: Timing = {
  warmupMs: 500,
  pointMs: 1500,
  throughputMs: 1500,
  drainMs: 2000,
  soakMs: 20_000,
  soakRate: 200,
  sampleMs: 250,
  rssSampleMs: 250
}

/** Allowance per measured point: opening and closing the pool, the last calls' drain, /proc reads. @category constants */
export const POINT_OVERHEAD_MS = 250
/** Allowance for starting the processes (the gateway runs its migrations). @category constants */
export const STARTUP_MS = 10_000
/** Allowance for stopping the gateway (it flushes its usage records), the billing check, the profile summary and the report. @category constants */
export const TEARDOWN_MS = 10_000
/** The memory scenario's ramp (streams opened over 1 s) plus settling, per proxy. @category constants */
export const MEMORY_EXTRA_MS = 2000

/** A target as the plan sees it. @category models */
export interface PlanTarget {
  readonly name: TargetName
  /** Has a process of its own (it takes part in the memory scenario and the soak). */
  readonly proxy: boolean
  /** Whether it runs a scenario. */
  readonly runs: (scenario: Scenario) => boolean
}

/** One step of a plan. @category models */
export interface PlanStep {
  readonly name: string
  readonly targets: ReadonlyArray<TargetName>
  readonly ms: number
}

/** A run's plan. @category models */
export interface Plan {
  readonly steps: ReadonlyArray<PlanStep>
  readonly totalMs: number
}

/**
 * The plan of a run: the memory scenario first (fresh processes), then the
 * latency scenarios in order, then the tracing step (`tracingMs`, null: not
 * run), then the soak on `soakTarget` (null: no soak), with the fixed start
 * and stop allowances.
 *
 * @category plan
 */
export const planRun = (
  list: ReadonlyArray<Scenario>,
  targets: ReadonlyArray<PlanTarget>,
  timing: Timing,
  soakTarget: TargetName | null,
  tracingMs: number | null = null
): Plan => {
  const steps: Array<PlanStep> = [{ name: "startup", targets: [], ms: STARTUP_MS }]
  const ordered = [...list.filter((s) => s.kind === "memory"), ...list.filter((s) => s.kind !== "memory")]
  for (const s of ordered) {
    const who = targets.filter((t) => t.runs(s) && (s.kind === "latency" || t.proxy))
    const perTarget = s.kind === "memory"
      ? (s.streamMs ?? 0) + MEMORY_EXTRA_MS
      : timing.warmupMs + s.rates.length * timing.pointMs + timing.throughputMs +
        (s.rates.length + 1) * POINT_OVERHEAD_MS
    steps.push({ name: s.name, targets: who.map((t) => t.name), ms: who.length * perTarget })
  }
  if (tracingMs !== null) steps.push({ name: "tracing", targets: ["modelgate"], ms: tracingMs })
  if (soakTarget !== null) steps.push({ name: "soak", targets: [soakTarget], ms: timing.soakMs + POINT_OVERHEAD_MS })
  steps.push({ name: "teardown", targets: [], ms: TEARDOWN_MS })
  return { steps, totalMs: steps.reduce((sum, s) => sum + s.ms, 0) }
}

/** "14 min 5 s", "48 s". @category plan */
export const formatDuration = (ms: number): string => {
  const seconds = Math.round(ms / 1000)
  const min = Math.floor(seconds / 60)
  return min === 0 ? `${seconds} s` : `${min} min ${seconds % 60} s`
}

/** The plan as one line: each step's wall time and the total. @category plan */
export const formatPlan = (plan: Plan): string =>
  `${
    plan.steps.filter((s) => s.name !== "startup" && s.name !== "teardown").map((s) =>
      `${s.name} ${formatDuration(s.ms)}`
    ).join(", ")
  }; about ${formatDuration(plan.totalMs)} in all (with ${formatDuration(STARTUP_MS + TEARDOWN_MS)} to start and stop)`

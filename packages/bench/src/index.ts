/**
 * `@modelgate/bench`: the load generator, scenarios, run and report of
 * modelgate's benchmarks, as a library. The commands are `src/main.ts`
 * (`pnpm bench`), `src/loadgen.ts` (the load generator on its own) and
 * `src/floor-proxy.ts`.
 *
 * @since 0.1.0
 */
export * as Billing from "./Billing.ts"
export * as FloorProxy from "./floor-proxy.ts"
export * as GatewayConfig from "./GatewayConfig.ts"
export * as Loadgen from "./loadgen.ts"
export * as LoadGenerator from "./LoadGenerator.ts"
export { closedLoop, type LoadResult, openLoop, type RequestSpec } from "./LoadGenerator.ts"
export * as Loopback from "./Loopback.ts"
export * as Plan from "./Plan.ts"
export * as Canvas from "./plot/Canvas.ts"
export * as Chart from "./plot/Chart.ts"
export * as Font from "./plot/Font.ts"
export * as Png from "./plot/Png.ts"
export * as Proc from "./Proc.ts"
export * as ProfileSummary from "./ProfileSummary.ts"
export * as Report from "./Report.ts"
export * as Runner from "./Runner.ts"
export * as Scenarios from "./Scenarios.ts"
export * as Services from "./Services.ts"
export * as Stats from "./Stats.ts"
export { Histogram } from "./Stats.ts"
export * as TracingCost from "./TracingCost.ts"

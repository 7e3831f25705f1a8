export * as FakeUpstream from "./FakeUpstream.ts"
export {
  DEFAULT_MODELS,
  type FakeUpstream as FakeUpstreamServer,
  type FakeUpstreamModels,
  type FakeUpstreamOptions,
  type RecordedRequest,
  startFakeUpstream
} from "./Server.ts"
export { parseListenAddress } from "./Listen.ts"
export type { CutMode, Scenario } from "./Scenario.ts"

export * as FakeUpstream from "./FakeUpstream.ts"
export { parseListenAddress } from "./Listen.ts"
export type { CutMode, Scenario } from "./Scenario.ts"
export {
  CONTROL_PATH,
  DEFAULT_MODELS,
  type FakeControls,
  type FakeUpstream as FakeUpstreamServer,
  type FakeUpstreamModels,
  type FakeUpstreamOptions,
  type RecordedRequest,
  startFakeUpstream
} from "./Server.ts"

export type { AwsCredential } from "./Aws.ts"
export { type BedrockOptions, DEFAULT_BEDROCK_MODELS, TEST_API_KEY, TEST_CREDENTIALS } from "./Bedrock.ts"
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
export { type ServiceAccount, TOKEN_PATH, type VertexOptions } from "./Vertex.ts"

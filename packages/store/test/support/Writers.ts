/**
 * What the usage writer's fault tests share: a usage record of one token each
 * way, and a layer built in a scope of its own.
 */
import type { UsageLog } from "@modelgate/core"
import { Context, Effect, Exit, Layer, Scope } from "effect"

/** A served call of one prompt and one completion token, charged 1 nano. */
export const record = (requestId: string): UsageLog.UsageRecord => ({
  createdAt: Date.now(),
  requestId,
  userId: "user-1",
  keyId: "key-1",
  model: "m",
  upstreamModel: "m",
  channel: "c",
  dialectIn: "openai",
  dialectOut: "openai",
  stream: false,
  promptTokens: 1,
  completionTokens: 1,
  cachedTokens: 0,
  usageReported: true,
  costNanos: 1n,
  latencyMs: 1,
  ttfbMs: null,
  status: 200,
  errorCode: null,
  attempts: 1,
  attemptLog: []
})

/** Builds a layer in a scope of its own, closed by `close`. */
export const build = async <I, S>(layer: Layer.Layer<I, never, never>, tag: Context.Key<I, S>) => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  return { service: Context.get(context, tag), close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

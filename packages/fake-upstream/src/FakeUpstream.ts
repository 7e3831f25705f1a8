/**
 * Effect wrappers around the Promise API (`startFakeUpstream`).
 *
 * @example
 * Effect.scoped(Effect.gen(function*() {
 *   const upstream = yield* FakeUpstream.scoped({ apiKey: "k" })
 *   // ... use upstream.url
 * }))
 */
import { Effect } from "effect"
import type * as Scope from "effect/Scope"
import { type FakeUpstream, type FakeUpstreamOptions, startFakeUpstream } from "./Server.ts"

export type { FakeControls, FakeUpstream, FakeUpstreamOptions, RecordedRequest } from "./Server.ts"

/** Start the server; fails with the listen error (e.g. EADDRINUSE). */
export const start = (options: FakeUpstreamOptions = {}): Effect.Effect<FakeUpstream, Error> =>
  Effect.tryPromise({
    try: () => startFakeUpstream(options),
    catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
  })

/** Start the server for the lifetime of the surrounding scope; closing the scope closes it. */
export const scoped = (options: FakeUpstreamOptions = {}): Effect.Effect<FakeUpstream, Error, Scope.Scope> =>
  Effect.acquireRelease(start(options), (upstream) => Effect.promise(() => upstream.close()))

/**
 * The health of every upstream key: its circuit breaker (`Breakers.ts`), and
 * whether it is disabled because the upstream refused its credentials.
 *
 * - Breakers live in this process's memory: each gateway node judges the
 *   upstreams by its own calls (docs/routing.md says so).
 * - A key is disabled only when a health probe with it is refused (a probe is
 *   a one-token request that carries nothing of a caller's, so its refusal is
 *   the key's): a call whose upstream refused the key makes it a suspect
 *   (`suspect`), which a probe checks at once. A clear refusal of the key
 *   (HTTP 401 and the like) keeps it out of calls until then; a 403 about
 *   what the request asked for leaves it in use (at most one such check per
 *   key per probe interval), so no request, however often repeated, can take
 *   a channel's keys down.
 * - Disabled keys are also written to the database (`ChannelKeyStates`), so a
 *   restart does not send calls to a revoked key again, and other nodes learn
 *   of it within `SYNC_INTERVAL`. Keys are named there by a keyed fingerprint.
 * - A prober runs every `routing.probe_interval_ms`: it sends one real,
 *   one-token request with each disabled key (re-enabling the key when that
 *   works), each suspect key not checked yet, and each key whose breaker
 *   finished its cool-down (a trial: success closes the breaker, failure
 *   opens it again). So keys recover even when no call tries them.
 *
 * Time comes from Effect's `Clock`, so tests drive all of it with `TestClock`.
 *
 * @since 0.1.0
 */
import {
  Catalog,
  ChannelHealth,
  ChannelKeyStates as KeyStates,
  ChannelProbe,
  Credentials,
  type Domain,
  OutageLog
} from "@modelgate/core"
import { Clock, Context, Duration, Effect, Layer, Schedule, Semaphore } from "effect"
import { Settings } from "../config/Settings.ts"
import { Breaker, type Outcome, type Permit } from "./Breakers.ts"

/** How often disabled keys are read back from the database (changes made by other nodes). @category constants */
export const SYNC_INTERVAL = Duration.seconds(5)

/** The longest an upstream's `retry-after` keeps a key out of rotation. @category constants */
export const MAX_RETRY_AFTER_MS = 10 * 60 * 1000

/** How long a model an upstream refused with a 403 is kept off that channel (see `Health.refuseModel`). @category constants */
export const MODEL_REFUSAL_MS = 10 * 60 * 1000

/** How many probes run at once. @category constants */
export const PROBE_CONCURRENCY = 4

/**
 * Whether a key may take a call now: `available` (breaker closed), `trial`
 * (half-open with a free trial slot), `open` (cooling down, or half-open with
 * every trial slot taken), `disabled` (credentials refused).
 *
 * @category models
 */
export type Availability = "available" | "trial" | "open" | "disabled"

/** A call admitted on a key; `end` records its outcome (once: later calls do nothing). @category models */
export interface Ticket {
  readonly entry: Entry
  readonly permit: Permit
  readonly settings: Domain.BreakerSettings
  done: boolean
}

interface Disabled {
  readonly since: number
  readonly status: number | null
  readonly reason: string
}

/**
 * How a call's upstream refused a key: its status, the reason as recorded
 * (`refusal`), and whether it was `clear` (the key itself: kept out of calls
 * until a probe decides) or a 403 about what the request asked for (the key
 * stays in use while a probe checks it).
 *
 * @category models
 */
export interface Refusal {
  readonly status: number
  readonly reason: string
  readonly clear: boolean
}

interface Suspicion extends Refusal {
  readonly since: number
}

/** The state kept per (channel, key). @category models */
export class Entry {
  readonly breaker = new Breaker()
  disabled: Disabled | undefined = undefined
  /** Refused on a call and not checked by a probe yet (see `Health.suspect`). */
  suspect: Suspicion | undefined = undefined
  /** A probe of this key is running (another is not started). */
  probing = false
  lastProbeAt: number | null = null
  lastProbeOk: boolean | null = null
  /** The local change sequence number of the last enable/disable made here (see `sync`). */
  changed = 0
  readonly channelId: string
  readonly fingerprint: string
  readonly hint: string
  constructor(channelId: string, fingerprint: string, hint: string) {
    this.channelId = channelId
    this.fingerprint = fingerprint
    this.hint = hint
  }
}

/** The display hint of an upstream key: its last 4 characters. @category models */
export const hintOf = (key: string): string => Credentials.keyHint(key)

/**
 * The health service.
 *
 * @category services
 */
export class Health extends Context.Service<Health, {
  /** Whether `key` of `channel` may take a call at `now` (no change made). */
  readonly availability: (channel: Domain.Channel, key: string, now: number) => Availability
  /** When an `open` key may be tried again (epoch ms). */
  readonly retryAt: (channel: Domain.Channel, key: string) => number
  /**
   * Admits a call on a key, or refuses it (undefined) when its breaker does
   * not let it through or it is disabled. `force` admits an open key anyway,
   * as a trial.
   */
  readonly begin: (channel: Domain.Channel, key: string, force: boolean) => Effect.Effect<Ticket | undefined>
  /**
   * Records how an admitted call ended. `retryAfterMs`: the upstream asked not
   * to be called again for that long (a 429's `retry-after`); the key is left
   * alone until then (at most `MAX_RETRY_AFTER_MS`).
   */
  readonly end: (ticket: Ticket, outcome: Outcome, error?: string, retryAfterMs?: number) => Effect.Effect<void>
  /**
   * A call's upstream refused `key` (see `Refusal`): a probe with the key
   * decides, at once where the service runs its background fibers (else in
   * the next `probeRound`), and disables it when the probe is refused too. A
   * clear refusal keeps the key out of calls until then (at most
   * `routing.probe_interval_ms`); a 403 about the request is checked at most
   * once per probe interval and leaves the key in use.
   */
  readonly suspect: (channel: Domain.Channel, key: string, refusal: Refusal) => Effect.Effect<void>
  /**
   * A call's upstream refused `model` on `channel` with a 403 (an organisation
   * not verified for it, a project without access): that model's problem on
   * that channel, not the key's. Calls for the model go to its other channels
   * for `MODEL_REFUSAL_MS` (or until the channel is reset).
   */
  readonly refuseModel: (channel: Domain.Channel, model: string, status: number, reason: string) => Effect.Effect<void>
  /**
   * A call for `model` through `key` of `channel` was refused with a 403: a
   * one-token probe of the model (carrying nothing of the caller's) decides,
   * at once where the service runs its background fibers (else in the next
   * `probeRound`), at most once per probe interval per model and channel; a
   * 403 to it too refuses the model there (`refuseModel`).
   */
  readonly suspectModel: (channel: Domain.Channel, key: string, model: string) => Effect.Effect<void>
  /** Whether `model` was refused on `channel` (see `refuseModel`) and is kept off it at `now`. */
  readonly modelRefused: (channel: Domain.Channel, model: string, now: number) => boolean
  /** Disables a key whose credentials the upstream refused (status and the upstream's message as the reason). */
  readonly disable: (channel: Domain.Channel, key: string, status: number | null, reason: string) => Effect.Effect<void>
  /** The health of a channel's keys (the `ChannelHealth` port). */
  readonly report: (channel: Domain.Channel) => Effect.Effect<ChannelHealth.ChannelReport>
  /** Closes the channel's breakers and re-enables its keys. */
  readonly reset: (channel: Domain.Channel) => Effect.Effect<void>
  /** Tests every key of a channel for `model` and records each outcome (the `ChannelHealth` port's `test`). */
  readonly test: (channel: Domain.Channel, model: string) => Effect.Effect<ReadonlyArray<ChannelHealth.KeyTest>>
  /** Reads disabled keys back from the store (what other nodes changed). */
  readonly sync: Effect.Effect<void>
  /** One round of health probes (the background prober runs it every interval). */
  readonly probeRound: Effect.Effect<void>
}>()("modelgate/engine/Health") {
  /**
   * The service without background fibers (tests call `sync` and `probeRound`
   * themselves). Disabled keys are loaded from the database when built.
   *
   * @category layers
   */
  static readonly layerNoLoops: Layer.Layer<
    Health,
    never,
    KeyStates.ChannelKeyStates | Catalog.Catalog | ChannelProbe.ChannelProbe | Settings
  > = Layer.effect(Health, Effect.suspend(() => make(false)))

  /**
   * The service with its background fibers: the database sync every
   * `SYNC_INTERVAL` and the prober every `routing.probe_interval_ms`.
   *
   * @category layers
   */
  static readonly layer: Layer.Layer<
    Health,
    never,
    KeyStates.ChannelKeyStates | Catalog.Catalog | ChannelProbe.ChannelProbe | Settings
  > = Layer.effect(
    Health,
    Effect.gen(function*() {
      const health = yield* make(true)
      const settings = yield* Settings
      yield* health.sync.pipe(Effect.repeat(Schedule.spaced(SYNC_INTERVAL)), Effect.forkScoped)
      yield* health.probeRound.pipe(
        Effect.catchCause((cause) => Effect.logWarning("a round of health probes failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.millis(settings.probeIntervalMs))),
        Effect.delay(Duration.millis(settings.probeIntervalMs)),
        Effect.forkScoped
      )
      return health
    })
  )

  /**
   * Core's `ChannelHealth` port over this service, for the management API.
   *
   * @category layers
   */
  static readonly layerPort: Layer.Layer<ChannelHealth.ChannelHealth, never, Health> = Layer.effect(
    ChannelHealth.ChannelHealth,
    Effect.map(
      Health,
      (health) => ChannelHealth.ChannelHealth.of({ report: health.report, reset: health.reset, test: health.test })
    )
  )
}

/** The service; `probeSoon`: a suspect key is probed at once, in the layer's scope (else only by `probeRound`). */
const make = (probeSoon: boolean) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const store = yield* KeyStates.ChannelKeyStates
    const catalog = yield* Catalog.Catalog
    const prober = yield* ChannelProbe.ChannelProbe
    const settings = yield* Settings
    const entries = new Map<string, Entry>()
    let sequence = 0
    // Probes of refused keys run at once, at most `PROBE_CONCURRENCY` of them together.
    const soon = Semaphore.makeUnsafe(PROBE_CONCURRENCY)

    const idOf = (channel: Domain.Channel, key: string) => `${channel.id}\u0000${key}`
    // Models a channel's upstream refused with a 403, by channel id and model: until when, and why.
    const refusedModels = new Map<string, ChannelHealth.RefusedModel>()

    const refuseModel = (channel: Domain.Channel, model: string, status: number, reason: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const id = `${channel.id}\u0000${model}`
        const previous = refusedModels.get(id)
        const first = (previous?.until ?? 0) <= now
        refusedModels.set(id, {
          model,
          since: first ? now : previous!.since,
          until: now + MODEL_REFUSAL_MS,
          status,
          reason
        })
        if (!first) return
        yield* Effect.logWarning(
          "the upstream refused a model with HTTP 403; calls for it go to its other channels for a while"
        ).pipe(Effect.annotateLogs({ channel: channel.name, model, status, reason }))
      })

    // Models whose 403 a probe is to check, by channel id and model; and when each was last checked.
    const modelSuspects = new Map<
      string,
      { readonly channel: Domain.Channel; readonly key: string; readonly model: string }
    >()
    const modelChecked = new Map<string, number>()

    const checkModel = (id: string) =>
      Effect.gen(function*() {
        const suspect = modelSuspects.get(id)
        if (suspect === undefined) return
        modelSuspects.delete(id)
        modelChecked.set(id, yield* Clock.currentTimeMillis)
        const result = yield* prober.probe(suspect.channel, suspect.model, suspect.key)
        if (result.status === 403 && !result.credentialsRefused) {
          yield* refuseModel(
            suspect.channel,
            suspect.model,
            403,
            refusal(403, result.upstreamMessage ?? result.message)
          )
        }
      })

    const suspectModel = (channel: Domain.Channel, key: string, model: string) =>
      Effect.gen(function*() {
        const id = `${channel.id}\u0000${model}`
        const now = yield* Clock.currentTimeMillis
        const last = modelChecked.get(id)
        if (modelSuspects.has(id) || (last !== undefined && now - last < settings.probeIntervalMs)) return
        modelSuspects.set(id, { channel, key, model })
        if (probeSoon) {
          yield* soon.withPermit(checkModel(id)).pipe(
            Effect.catchCause((cause) => Effect.logWarning("a health probe of a refused model failed", cause)),
            Effect.forkIn(scope)
          )
        }
      })

    const modelRefused = (channel: Domain.Channel, model: string, now: number): boolean => {
      const refused = refusedModels.get(`${channel.id}\u0000${model}`)
      return refused !== undefined && refused.until > now
    }
    const entryFor = (channel: Domain.Channel, key: string): Entry => {
      const id = idOf(channel, key)
      let entry = entries.get(id)
      if (entry === undefined) {
        entry = new Entry(channel.id, store.fingerprint(key), hintOf(key))
        entries.set(id, entry)
      }
      return entry
    }

    const availability = (channel: Domain.Channel, key: string, now: number): Availability => {
      const entry = entries.get(idOf(channel, key))
      if (entry === undefined) return "available"
      if (entry.disabled !== undefined) return "disabled"
      const permit = entry.breaker.peek(now, channel.breaker)
      return permit === "closed" ? "available" : permit === "trial" ? "trial" : "open"
    }

    const retryAt = (channel: Domain.Channel, key: string): number =>
      entries.get(idOf(channel, key))?.breaker.retryAt ?? 0

    // Both read the clock directly in one step (`Clock.currentTimeMillis` would be a second): every attempt runs them.
    const begin = (channel: Domain.Channel, key: string, force: boolean) =>
      Effect.clockWith((clock): Effect.Effect<Ticket | undefined> => {
        const now = clock.currentTimeMillisUnsafe()
        const entry = entryFor(channel, key)
        if (entry.disabled !== undefined) return Effect.undefined
        const permit = entry.breaker.acquire(now, channel.breaker, force)
        return Effect.succeed(
          permit === undefined ? undefined : { entry, permit, settings: channel.breaker, done: false }
        )
      })

    const end = (ticket: Ticket, outcome: Outcome, error?: string, retryAfterMs?: number) =>
      Effect.clockWith((clock) => {
        const now = clock.currentTimeMillisUnsafe()
        if (ticket.done) return Effect.void
        ticket.done = true
        const breaker = ticket.entry.breaker
        const before = breaker.state
        breaker.release(ticket.permit, outcome, now, ticket.settings, error)
        if (retryAfterMs !== undefined && retryAfterMs > 0) {
          const wait = Math.min(retryAfterMs, MAX_RETRY_AFTER_MS)
          breaker.holdUntil(now, now + wait, `the upstream asked to retry after ${Math.ceil(wait / 1000)} s (HTTP 429)`)
        }
        if (before === breaker.state) return Effect.void
        return breaker.state === "open"
          ? Effect.logWarning("circuit breaker opened").pipe(
            Effect.annotateLogs({
              channelId: ticket.entry.channelId,
              key: ticket.entry.hint,
              reason: breaker.reason ?? ""
            })
          )
          : Effect.logInfo("circuit breaker closed").pipe(
            Effect.annotateLogs({ channelId: ticket.entry.channelId, key: ticket.entry.hint })
          )
      })

    const persist = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
      effect.pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning(`${what} could not be written to the database`, cause)),
        Effect.uninterruptible
      )

    const disable = (channel: Domain.Channel, key: string, status: number | null, reason: string) =>
      Effect.gen(function*() {
        const entry = entryFor(channel, key)
        const now = yield* Clock.currentTimeMillis
        const first = entry.disabled === undefined
        entry.disabled = { since: entry.disabled?.since ?? now, status, reason }
        entry.changed = ++sequence
        if (!first) return
        yield* Effect.logWarning("upstream key disabled: the upstream refused its credentials").pipe(
          Effect.annotateLogs({ channel: channel.name, key: entry.hint, status: status ?? "", reason })
        )
        yield* persist(
          "a disabled upstream key",
          store.disable({
            channelId: channel.id,
            fingerprint: entry.fingerprint,
            status,
            reason,
            disabledAt: now,
            nodeId: settings.nodeId
          })
        )
      })

    const suspect = (channel: Domain.Channel, key: string, refusal: Refusal) =>
      Effect.gen(function*() {
        const entry = entryFor(channel, key)
        if (entry.disabled !== undefined) return
        const now = yield* Clock.currentTimeMillis
        // A 403 about the request says little about the key: one check per key per probe interval is enough.
        const checked = entry.suspect !== undefined ||
          (entry.lastProbeAt !== null && now - entry.lastProbeAt < settings.probeIntervalMs)
        if (!refusal.clear && checked) return
        if (refusal.clear) {
          entry.breaker.holdUntil(
            now,
            now + settings.probeIntervalMs,
            `${refusal.reason} (a health probe is checking the key)`
          )
        }
        const first = entry.suspect === undefined
        entry.suspect = { ...refusal, since: entry.suspect?.since ?? now }
        if (!first) return
        yield* Effect.logWarning(
          refusal.clear
            ? "the upstream refused an upstream key; it is kept out of calls while a health probe checks it"
            : "the upstream refused a call with HTTP 403; a health probe checks the key, which stays in use"
        ).pipe(
          Effect.annotateLogs({
            channel: channel.name,
            key: entry.hint,
            status: refusal.status,
            reason: refusal.reason
          })
        )
        if (probeSoon) {
          yield* soon.withPermit(probeKey(channel, key)).pipe(
            Effect.catchCause((cause) => Effect.logWarning("a health probe of a refused key failed", cause)),
            Effect.forkIn(scope)
          )
        }
      })

    const enable = (channel: Domain.Channel, entry: Entry, why: string) =>
      Effect.gen(function*() {
        if (entry.disabled === undefined) return
        entry.disabled = undefined
        entry.changed = ++sequence
        entry.breaker.close(yield* Clock.currentTimeMillis)
        yield* Effect.logInfo("upstream key enabled again").pipe(
          Effect.annotateLogs({ channel: channel.name, key: entry.hint, why })
        )
        yield* persist("an enabled upstream key", store.enable(channel.id, entry.fingerprint))
      })

    const report = (channel: Domain.Channel) =>
      Effect.map(Clock.currentTimeMillis, (now): ChannelHealth.ChannelReport => {
        const keys = channel.apiKeys.map((key, index): ChannelHealth.KeyHealth => {
          const entry = entries.get(idOf(channel, key))
          const breaker = entry?.breaker
          const recent = breaker?.recent(now, channel.breaker.windowMs) ?? { calls: 0, failures: 0 }
          const common = {
            index,
            hint: hintOf(key),
            recentCalls: recent.calls,
            recentFailures: recent.failures,
            consecutiveFailures: breaker?.consecutiveFailures ?? 0,
            lastFailureAt: breaker?.lastFailureAt ?? null,
            lastError: breaker?.lastError ?? null,
            lastProbeAt: entry?.lastProbeAt ?? null,
            lastProbeOk: entry?.lastProbeOk ?? null
          }
          if (entry?.disabled !== undefined) {
            return {
              ...common,
              state: "disabled",
              since: entry.disabled.since,
              reason: entry.disabled.reason,
              status: entry.disabled.status,
              retryAt: null
            }
          }
          const state = breaker?.stateAt(now) ?? "closed"
          if (state === "closed") {
            return {
              ...common,
              state: "healthy",
              since: breaker?.since ?? null,
              reason: null,
              status: null,
              retryAt: null
            }
          }
          return {
            ...common,
            state,
            since: state === "half_open" && breaker!.state === "open" ? breaker!.retryAt : breaker!.since,
            reason: breaker!.reason,
            status: null,
            retryAt: state === "open" ? breaker!.retryAt : null
          }
        })
        const refused: Array<ChannelHealth.RefusedModel> = []
        const prefix = `${channel.id}\u0000`
        for (const [id, model] of refusedModels) if (id.startsWith(prefix) && model.until > now) refused.push(model)
        refused.sort((a, b) => a.model < b.model ? -1 : a.model > b.model ? 1 : 0)
        return { state: ChannelHealth.channelStateOf(keys, refused.length), keys, refusedModels: refused }
      })

    const reset = (channel: Domain.Channel) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const key of channel.apiKeys) {
          const entry = entryFor(channel, key)
          entry.breaker.close(now)
          entry.disabled = undefined
          entry.suspect = undefined
          entry.changed = ++sequence
        }
        for (const id of refusedModels.keys()) if (id.startsWith(`${channel.id}\u0000`)) refusedModels.delete(id)
        yield* Effect.logInfo("channel health reset by an administrator").pipe(
          Effect.annotateLogs({ channel: channel.name })
        )
        yield* persist("re-enabled upstream keys", store.enableChannel(channel.id))
      })

    // Disabled keys from the database: what other nodes (or an earlier run) decided. A local change made
    // while the read was in flight wins over what the read saw.
    // Every 5 s: while the database is down, one line per outage rather than one per round.
    const syncOutage = OutageLog.make("reading disabled upstream keys (the database)")
    const sync = Effect.gen(function*() {
      const seen = sequence
      const rows = yield* store.list
      const disabled = new Map(rows.map((row) => [`${row.channelId}\u0000${row.fingerprint}`, row]))
      const snapshot = yield* catalog.current
      for (const channel of snapshot.channels) {
        for (const key of channel.apiKeys) {
          const id = idOf(channel, key)
          const known = entries.get(id)
          const fingerprint = known?.fingerprint ?? store.fingerprint(key)
          const row = disabled.get(`${channel.id}\u0000${fingerprint}`)
          if (known === undefined && row === undefined) continue
          const entry = known ?? entryFor(channel, key)
          if (entry.changed > seen) continue
          if (row !== undefined) entry.disabled = { since: row.disabledAt, status: row.status, reason: row.reason }
          else if (entry.disabled !== undefined) {
            entry.disabled = undefined
            entry.breaker.close(yield* Clock.currentTimeMillis)
          }
        }
      }
    }).pipe(Effect.andThen(syncOutage.succeeded), Effect.catchCause(syncOutage.failed))

    const probeKey = (channel: Domain.Channel, key: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const entry = entryFor(channel, key)
        if (entry.probing) return Effect.void
        entry.probing = true
        return probeOnce(channel, key, entry).pipe(Effect.ensuring(Effect.sync(() => entry.probing = false)))
      })

    const probeOnce = (channel: Domain.Channel, key: string, entry: Entry) =>
      Effect.gen(function*() {
        const suspicion = entry.suspect
        if (entry.disabled === undefined && suspicion !== undefined) {
          // A key a call's upstream refused: the probe's answer decides.
          const result = yield* prober.checkKey(channel, key)
          const now = yield* Clock.currentTimeMillis
          entry.lastProbeAt = now
          entry.lastProbeOk = result.ok
          if (result.credentialsRefused) {
            entry.suspect = undefined
            return yield* disable(
              channel,
              key,
              result.status,
              refusal(result.status, result.upstreamMessage ?? result.message)
            )
          }
          // Not refused, but not answered either (a timeout, a 5xx): the suspicion stands for the next round.
          if (!result.ok) return
          entry.suspect = undefined
          if (suspicion.clear) entry.breaker.close(now)
          return yield* Effect.logInfo("a health probe found a refused upstream key working; it is not disabled").pipe(
            Effect.annotateLogs({ channel: channel.name, key: entry.hint, refusal: suspicion.reason })
          )
        }
        if (entry.disabled === undefined) {
          // A breaker whose cool-down is over: the probe is its trial.
          const ticket = yield* begin(channel, key, false)
          if (ticket === undefined) return
          if (ticket.permit === "closed") return yield* end(ticket, "neutral")
          const result = yield* prober.checkKey(channel, key)
          entry.lastProbeAt = yield* Clock.currentTimeMillis
          entry.lastProbeOk = result.ok
          if (result.credentialsRefused) {
            yield* end(ticket, "neutral")
            return yield* disable(
              channel,
              key,
              result.status,
              refusal(result.status, result.upstreamMessage ?? result.message)
            )
          }
          return yield* end(
            ticket,
            result.ok ? "success" : "failure",
            result.ok ? undefined : `probe: ${result.message}`
          )
        }
        const result = yield* prober.checkKey(channel, key)
        entry.lastProbeAt = yield* Clock.currentTimeMillis
        entry.lastProbeOk = result.ok
        if (result.ok) return yield* enable(channel, entry, "a health probe with the key succeeded")
        if (result.credentialsRefused) {
          entry.disabled = {
            since: entry.disabled?.since ?? entry.lastProbeAt,
            status: result.status,
            reason: refusal(result.status, result.upstreamMessage ?? result.message)
          }
        }
      })

    // An operator's test: every key, at most PROBE_CONCURRENCY at once, each outcome recorded as a probe's.
    const testKey = (channel: Domain.Channel, key: string, index: number, model: string) =>
      Effect.gen(function*() {
        const tried = yield* prober.probe(channel, model, key)
        // A 403 to the model may be that model's alone: the key's own check decides about the key.
        const check = tried.status === 403 && !tried.credentialsRefused
          ? yield* prober.checkKey(channel, key)
          : undefined
        const result = check?.credentialsRefused === true ? { ...tried, credentialsRefused: true } : tried
        const entry = entryFor(channel, key)
        const now = yield* Clock.currentTimeMillis
        if (check !== undefined && !check.credentialsRefused) {
          yield* refuseModel(channel, model, 403, refusal(403, tried.upstreamMessage ?? tried.message))
        }
        entry.lastProbeAt = now
        entry.lastProbeOk = result.ok
        if (result.ok) {
          entry.suspect = undefined
          if (entry.disabled !== undefined) {
            yield* enable(channel, entry, "an administrator's Test with the key succeeded")
          } else entry.breaker.close(now)
        } else if (result.credentialsRefused) {
          entry.suspect = undefined
          yield* disable(channel, key, result.status, refusal(result.status, result.upstreamMessage ?? result.message))
        } else if (result.status === null || result.status >= 500 || result.status === 429 || result.status < 400) {
          // Unreachable, timed out, failing, rate-limiting us, or a 200 that is not an answer: the key is failing.
          if (entry.disabled === undefined) {
            entry.breaker.testFailed(now, channel.breaker, result.message)
          }
        }
        // Any other 4xx refused the request (a model name the upstream does not know, say): the key itself is fine.
        const tested: ChannelHealth.KeyTest = { ...result, index, hint: entry.hint }
        return tested
      })

    const test = (channel: Domain.Channel, model: string) =>
      Effect.gen(function*() {
        const results = yield* Effect.forEach(channel.apiKeys, (key, index) => testKey(channel, key, index, model), {
          concurrency: PROBE_CONCURRENCY
        })
        yield* Effect.logInfo("channel tested by an administrator").pipe(
          Effect.annotateLogs({
            channel: channel.name,
            model,
            ok: results.filter((r) => r.ok).length,
            failed: results.filter((r) => !r.ok).length
          })
        )
        return results
      })

    const probeRound = Effect.gen(function*() {
      const snapshot = yield* catalog.current
      const now = yield* Clock.currentTimeMillis
      const due: Array<readonly [Domain.Channel, string]> = []
      const live = new Set<string>()
      for (const channel of snapshot.channels) {
        for (const key of channel.apiKeys) {
          const id = idOf(channel, key)
          live.add(id)
          if (!channel.enabled) continue
          const entry = entries.get(id)
          if (entry === undefined) continue
          if (
            entry.disabled !== undefined || entry.suspect !== undefined ||
            entry.breaker.peek(now, channel.breaker) === "trial"
          ) {
            due.push([channel, key])
          }
        }
      }
      // Keys that left the catalog (edited or deleted channels) are forgotten.
      for (const id of entries.keys()) if (!live.has(id)) entries.delete(id)
      yield* Effect.forEach(due, ([channel, key]) => probeKey(channel, key), {
        concurrency: PROBE_CONCURRENCY,
        discard: true
      })
      yield* Effect.forEach([...modelSuspects.keys()], checkModel, { concurrency: PROBE_CONCURRENCY, discard: true })
    })

    // What an earlier run (or another node) disabled applies from the first call.
    yield* sync

    return Health.of({
      availability,
      retryAt,
      begin,
      end,
      suspect,
      refuseModel,
      suspectModel,
      modelRefused,
      disable,
      report,
      reset,
      test,
      sync,
      probeRound
    })
  })

/** The reason recorded for a refused key: the status and the upstream's message. @category formatting */
export const refusal = (status: number | null, message: string): string =>
  `${status === null ? "refused" : `HTTP ${status}`}: ${message.length > 300 ? `${message.slice(0, 300)}…` : message}`

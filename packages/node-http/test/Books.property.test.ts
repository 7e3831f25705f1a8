/**
 * The books match the upstream's bill (issue 20): a model-based property test
 * of the money path, with fast-check's `commands`, on the embedded store (the
 * engine's `MemoryStore`) and on the SQLite store (balance leases, per-call
 * database holds for capped keys, the batch writer, restarts).
 *
 * One gateway (the engine's web handler, its public entry) serves four front
 * doors (OpenAI chat completions, Responses, Gemini, Anthropic Messages), each
 * over two channels of its own dialect on the fake upstream. Between them
 * sits a scripted transport: every call names a script, and each upstream
 * attempt of it takes the script's next step: the connection refused, a
 * timeout before the headers, the upstream's 500, or an answer whose usage is
 * as scripted (ordinary, zero, huge, missing, or not token counts) and which
 * completes, is cut by the upstream after its first chunks, or stalls.
 *
 * Commands: calls on each front door, stream or not, read to the end, left
 * by the client after the first chunk, left before the first byte (the
 * client hangs up while the upstream is still working: a non-stream answer
 * is still read and charged, a stream cancelled), or left in flight (a
 * stalled stream);
 * cancellations of calls in flight; top-ups; cap changes (lifetime quota,
 * daily budget); key revocations; and on SQLite user deletions and restarts
 * (the configuration file applied again).
 *
 * After every command, and at the end:
 * - each user's balance is the opening balance, plus top-ups, minus the
 *   charges (the usage records' costs), minus what calls in flight hold; on
 *   SQLite the balance column equals the ledger's sum, every key's spending
 *   equals its records' costs, and the database holds one record per call;
 * - every call admitted is admitted exactly when the balance (and the key's
 *   caps) covered its hold at that moment: no call is admitted while the
 *   balance is at or below zero or a key's spending is at its cap, except
 *   calls already in flight;
 * - a call the upstream answered is charged its usage at the operator's
 *   prices, exactly what it reported when it reported valid figures (local
 *   estimates, capped at the hold, otherwise); a call no upstream answered
 *   is charged nothing, `per_request` included; a refused call nothing;
 * - a balance below zero is below it by no more than the overrun of calls
 *   (what they cost beyond their holds), and a key's spending past its cap
 *   likewise;
 * - usage records equal calls (every call with a valid key has one), and no
 *   request id is recorded twice.
 *
 * It runs in CI with a fixed seed and a bounded number of runs; `pnpm
 * test:books --runs N [--seed S]` runs it longer (BOOKS_RUNS, BOOKS_SEED). A
 * failure prints the shrunk command sequence.
 *
 * Not modelled here (tested by examples in the engine): type checks of
 * hold-sizing fields on bodies over 16 KiB, duplicate top-level keys, and
 * media parts counted by kind.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  Accounts as AccountsPort,
  Catalog,
  ChannelKeyStates as ChannelKeyStatesPort,
  type Domain,
  KeyStore,
  Money,
  Pricing,
  Tokens,
  UsageLog
} from "@modelgate/core"
import { toWebHandler, type WebHandler } from "@modelgate/engine/host/WebHandler"
import * as FetchTransport from "@modelgate/engine/wire/FetchTransport"
import { Transport, TransportError } from "@modelgate/engine/wire/Transport"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { Accounts } from "@modelgate/store/Accounts"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import { ChannelKeyStates } from "@modelgate/store/ChannelKeyStates"
import { Keys } from "@modelgate/store/Keys"
import * as Store from "@modelgate/store/Store"
import { UsageWriter } from "@modelgate/store/UsageWriter"
import { Users } from "@modelgate/store/Users"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Provision from "../src/Provision.ts"

// ---------------------------------------------------------------------------
// Sizes: a fixed seed and a bounded number of runs in CI; more with `pnpm test:books --runs N`
// ---------------------------------------------------------------------------

const RUNS = Number(process.env["BOOKS_RUNS"] ?? "0")
const SEED = Number(process.env["BOOKS_SEED"] ?? "20020")
const memoryRuns = RUNS > 0 ? RUNS : 150
const sqliteRuns = RUNS > 0 ? Math.max(1, Math.ceil(RUNS / 4)) : 40
const MAX_COMMANDS = 24

// ---------------------------------------------------------------------------
// The gateway's configuration: prices, doors, users and keys
// ---------------------------------------------------------------------------

const doors = ["openai", "responses", "gemini", "anthropic"] as const
type Door = (typeof doors)[number]
const userNames = ["ann", "bob"] as const
type UserName = (typeof userNames)[number]
const keyNames = ["plain", "capped"] as const
type KeyName = (typeof keyNames)[number]

/** Every door's model: $1 per million prompt tokens, $2 per million completion tokens, $0.00001 per call. */
const MODEL: Domain.Model = {
  id: "m",
  displayName: "m",
  inputNanosPerMillion: 1_000_000_000n,
  outputNanosPerMillion: 2_000_000_000n,
  cachedInputNanosPerMillion: null,
  perRequestNanos: 10_000n,
  free: false,
  inputTokenLimit: 128_000,
  outputTokenLimit: 16_384
}
const RATIO = 1_000_000n
const modelOf = (door: Door) => `m-${door}`

const secretOf = (user: UserName, key: KeyName) => `sk-books-${user}-${key}-0000000000000`

/** Each door's two channels of its own dialect (Responses: OpenAI channels that relay it), never opened by breakers. */
const channels = (upstream: string) =>
  doors.flatMap((door) =>
    ["primary", "backup"].map((role) => ({
      name: `${role}-${door}`,
      type: door === "responses" ? "openai" as const : door,
      base_url: door === "openai" || door === "responses" ? `${upstream}/v1` : upstream,
      api_key: "sk-upstream-books-0000000000",
      models: [modelOf(door)],
      priority: role === "primary" ? 10 : 0,
      ...(door === "responses" ? { responses: true } : {}),
      breaker: { consecutive_failures: 1_000_000, minimum_calls: 1_000_000 }
    }))
  )

interface Opening {
  readonly balances: Readonly<Record<UserName, bigint>>
  readonly caps: Readonly<Record<UserName, bigint>>
}

const configOf = (upstream: string, opening: Opening) => ({
  log_level: "error" as const,
  routing: { probe_interval_ms: 3_600_000, max_attempts: 2 },
  channels: channels(upstream),
  models: Object.fromEntries(doors.map((door) => [modelOf(door), { input: 1, output: 2, per_request: "0.00001" }])),
  users: [
    // An admin, so the server creates none (and prints no password).
    { name: "root", role: "admin" as const },
    ...userNames.map((user) => ({
      name: user,
      balance: Money.formatUsd(opening.balances[user]),
      keys: [
        { name: "plain", secret: secretOf(user, "plain") },
        { name: "capped", secret: secretOf(user, "capped"), quota: Money.formatUsd(opening.caps[user]) }
      ]
    }))
  ]
})

// ---------------------------------------------------------------------------
// The scripted upstream: what each attempt of each call meets
// ---------------------------------------------------------------------------

/** The usage an answer reports. */
type UsageScript =
  | { readonly _tag: "counts"; readonly prompt: number; readonly completion: number }
  | { readonly _tag: "missing" }
  | { readonly _tag: "malformed"; readonly prompt: number; readonly completion: number }

/** One upstream attempt. */
type Attempt =
  | { readonly _tag: "refused" }
  | { readonly _tag: "timeout" }
  | { readonly _tag: "failed" }
  | { readonly _tag: "answer"; readonly usage: UsageScript; readonly end: "complete" | "cut" | "stall" }

/** What the runs went through, so a run that exercised nothing cannot pass unnoticed. */
const seen = new Map<string, number>()
const saw = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)

const scripts = new Map<number, Array<Attempt>>()
/**
 * Calls whose client hangs up before the first byte: the answering attempt's
 * headers come 60 ms late, and the client leaves 5 ms after it was sent.
 */
const leaving = new Map<number, () => void>()
const scriptProblems: Array<string> = []
let nextScript = 0
const decoder = new TextDecoder()

/** Headers that make the fake upstream answer as the attempt says (a stream's cut or stall only for streams). */
const fakeHeaders = (attempt: Attempt & { readonly _tag: "answer" | "failed" }, stream: boolean) => {
  if (attempt._tag === "failed") return { "x-fake-fail": "500" }
  const usage = attempt.usage
  return {
    ...(usage._tag === "missing"
      ? { "x-fake-usage": "none" }
      : { "x-fake-usage-values": `${usage.prompt},${usage.completion}` }),
    ...(stream && attempt.end === "cut" ? { "x-fake-cut-after": "2" } : {}),
    ...(stream && attempt.end === "stall" ? { "x-fake-stall-after": "2" } : {})
  }
}

/**
 * The transport: the runtime's fetch to the fake upstream, each attempt of a
 * scripted call (its script's id is in the prompt, `#s<id>#`) as its script says.
 */
const scriptedTransport = Layer.effect(
  Transport,
  Effect.map(Transport, (inner) =>
    Transport.of({
      send: (request) =>
        Effect.suspend(() => {
          const body = request.body === undefined
            ? ""
            : typeof request.body === "string"
            ? request.body
            : decoder.decode(request.body)
          const id = /#s(\d+)#/.exec(body)?.[1]
          if (id === undefined) return inner.send(request)
          const attempt = scripts.get(Number(id))?.shift()
          if (attempt === undefined) {
            scriptProblems.push(`script ${id}: an attempt beyond the script`)
            return Effect.fail(new TransportError({ kind: "unreachable", detail: "no script" }))
          }
          switch (attempt._tag) {
            case "refused":
              return Effect.fail(new TransportError({ kind: "unreachable", detail: "ECONNREFUSED" }))
            case "timeout":
              return Effect.fail(new TransportError({ kind: "first-byte-timeout" }))
            default: {
              const leave = attempt._tag === "answer" ? leaving.get(Number(id)) : undefined
              if (leave !== undefined) {
                leaving.delete(Number(id))
                setTimeout(leave, 5)
              }
              return inner.send({
                ...request,
                headers: {
                  ...request.headers,
                  ...fakeHeaders(attempt, /"stream"\s*:\s*true|alt=sse/.test(body + request.url)),
                  ...(leave === undefined ? {} : { "x-fake-delay-first-ms": "60" })
                }
              })
            }
          }
        })
    }))
).pipe(Layer.provide(FetchTransport.layer))

// ---------------------------------------------------------------------------
// A gateway under test: the embedded store, or SQLite through the store's ports
// ---------------------------------------------------------------------------

interface Gateway {
  readonly kind: "memory" | "sqlite"
  readonly handler: (request: Request) => Promise<Response>
  /** What the user may spend: the balance less what calls in flight hold. */
  readonly spendable: (user: UserName) => Promise<bigint>
  /** The usage record of a request, once written (undefined when it never is). */
  readonly record: (requestId: string) => Promise<UsageLog.UsageRecord | undefined>
  /** How many usage records there are, and how many distinct request ids. */
  readonly recordCount: () => Promise<{ readonly records: number; readonly distinct: number }>
  readonly topUp: (user: UserName, nanos: bigint) => Promise<void>
  readonly setCap: (user: UserName, key: KeyName, cap: "quota" | "daily", nanos: bigint | null) => Promise<void>
  readonly revoke: (user: UserName, key: KeyName) => Promise<void>
  readonly deleteUser?: (user: UserName) => Promise<void>
  readonly restart?: () => Promise<void>
  /** The store's own books: the balance column equals the ledger, keys' spending equals what the model says. */
  readonly storeBooks?: (spent: ReadonlyMap<string, bigint>) => Promise<void>
  readonly dispose: () => Promise<void>
}

const poll = async <A>(read: () => Promise<A | undefined> | A | undefined, ms = 5_000): Promise<A | undefined> => {
  const until = Date.now() + ms
  for (;;) {
    const value = await read()
    if (value !== undefined || Date.now() > until) return value
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

const memoryGateway = async (upstream: string, opening: Opening): Promise<Gateway> => {
  const gateway = await toWebHandler(configOf(upstream, opening), { transport: scriptedTransport })
  const inspect = gateway.inspect!
  const admin = gateway.admin!
  const byId = () => new Map(inspect.usage().map((record) => [record.requestId, record]))
  return {
    kind: "memory",
    handler: gateway.handler,
    spendable: async (user) => inspect.spendable(user)!,
    record: (requestId) => poll(() => byId().get(requestId)),
    recordCount: async () => {
      const records = inspect.usage()
      return { records: records.length, distinct: new Set(records.map((r) => r.requestId)).size }
    },
    topUp: async (user, nanos) => {
      assert.isDefined(admin.credit(user, nanos))
    },
    setCap: async (user, key, cap, nanos) => {
      assert.isTrue(admin.setCaps(user, key, cap === "quota" ? { quotaNanos: nanos } : { dailyBudgetNanos: nanos }))
    },
    revoke: async (user, key) => {
      assert.isTrue(admin.revoke(user, key))
    },
    dispose: gateway.dispose
  }
}

/** The SQLite store's services, built in a scope. */
const storeServices = (url: string) =>
  ChannelKeyStates.layerPort.pipe(
    Layer.provideMerge(
      Store.layer({
        url,
        masterKey: { secret: Redacted.make("books property test secret 0123456789") },
        nodeId: "books-node",
        usage: { flushIntervalMs: 20 }
      })
    ),
    Layer.orDie
  )

type StoreContext = Context.Context<Layer.Success<ReturnType<typeof storeServices>>>

const sqliteGateway = async (upstream: string, opening: Opening): Promise<Gateway> => {
  const dir = mkdtempSync(join(tmpdir(), "modelgate-books-"))
  const url = `sqlite:${join(dir, "gateway.db")}`
  const config = configOf(upstream, opening)
  const settings = { configSource: "books.yaml" } as Parameters<typeof Provision.apply>[1]
  /** Every usage record the store was given, by request id (the database is checked against it). */
  const written = new Map<string, UsageLog.UsageRecord>()
  let scope: Scope.Closeable
  let context: StoreContext
  let gateway: WebHandler
  const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<ReturnType<typeof storeServices>>>) =>
    Effect.runPromise(Effect.provideContext(effect, context))

  const start = async () => {
    scope = Scope.makeUnsafe()
    context = await Effect.runPromise(Layer.buildWithScope(storeServices(url), scope))
    // The configuration file, applied at every start, as the server does.
    await run(Provision.apply(config, settings).pipe(Effect.orDie))
    const snapshot = Catalog.makeSnapshot(await run(Effect.flatMap(CatalogRepo, (repo) => repo.load)))
    const usage = Context.get(context, UsageLog.UsageLog)
    const ports = Context.make(KeyStore.KeyStore, Context.get(context, KeyStore.KeyStore)).pipe(
      Context.add(Catalog.Catalog, { current: Effect.succeed(snapshot) }),
      Context.add(AccountsPort.Accounts, Context.get(context, AccountsPort.Accounts)),
      Context.add(UsageLog.UsageLog, {
        record: (record) =>
          Effect.andThen(Effect.sync(() => written.set(record.requestId, record)), usage.record(record))
      }),
      Context.add(ChannelKeyStatesPort.ChannelKeyStates, Context.get(context, ChannelKeyStatesPort.ChannelKeyStates))
    )
    gateway = await toWebHandler(config, { store: Layer.succeedContext(ports), transport: scriptedTransport })
  }
  const stop = async () => {
    await gateway.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  await start()

  const userId = (user: UserName) =>
    run(Effect.flatMap(Users, (users) => users.findByName(user))).then((found) => found?.id)
  const ids = new Map<UserName, string>()
  for (const user of userNames) ids.set(user, (await userId(user))!)
  const keyId = async (user: UserName, key: KeyName) => {
    const list = await run(Effect.flatMap(Keys, (keys) => keys.list(ids.get(user)!)))
    return list.find((k) => k.name === key)!.id
  }

  return {
    kind: "sqlite",
    handler: (request) => gateway.handler(request),
    spendable: (user) => run(Effect.flatMap(AccountsPort.Accounts, (a) => a.balance(ids.get(user)!))),
    record: (requestId) => poll(() => written.get(requestId)),
    recordCount: async () => {
      await run(Effect.flatMap(UsageWriter, (writer) => writer.flush))
      const rows = await run(Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`SELECT COUNT(*) AS n, COUNT(DISTINCT request_id) AS d FROM usage_records`
      ))
      assert.strictEqual(Number(rows[0]!.n), written.size, "the database holds every record the store was given")
      return { records: Number(rows[0]!.n), distinct: Number(rows[0]!.d) }
    },
    topUp: (user, nanos) =>
      run(Effect.flatMap(Accounts, (a) => a.topUp(ids.get(user)!, nanos, "books", "test"))).then(() => undefined),
    setCap: async (user, key, cap, nanos) => {
      const id = await keyId(user, key)
      await run(Effect.flatMap(
        Keys,
        (keys) => keys.update(id, cap === "quota" ? { quotaNanos: nanos } : { dailyBudgetNanos: nanos })
      ))
    },
    revoke: async (user, key) => {
      const id = await keyId(user, key)
      await run(Effect.flatMap(Keys, (keys) => keys.revoke(id)))
    },
    deleteUser: async (user) => {
      await run(Effect.flatMap(Users, (users) => users.remove(ids.get(user)!)))
    },
    restart: async () => {
      await stop()
      await start()
    },
    storeBooks: async (spent) => {
      await run(Effect.flatMap(UsageWriter, (writer) => writer.flush))
      for (const user of userNames) {
        const id = ids.get(user)!
        const [column, ledger] = await run(Effect.flatMap(
          Accounts,
          (a) => Effect.all([a.balance(id), a.ledgerSum(id)])
        ))
        assert.strictEqual(column, ledger, `${user}: the balance column equals the ledger's sum`)
        for (const key of keyNames) {
          const found = await run(Effect.flatMap(
            Keys,
            (keys) => Effect.flatMap(keys.list(id), (list) => Effect.succeed(list.find((k) => k.name === key)))
          ))
          assert.strictEqual(found!.spentNanos, spent.get(`${user}/${key}`) ?? 0n, `${user}/${key}: the key's spending`)
        }
      }
    },
    dispose: async () => {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

interface UserState {
  opening: bigint
  topUps: bigint
  /** What the user's calls were charged: the sum of their records' costs. */
  charged: bigint
  /** What those calls cost beyond their holds. */
  overrun: bigint
  deleted: boolean
}

interface KeyState {
  quota: bigint | null
  daily: bigint | null
  revoked: boolean
  spent: bigint
  /** What the key was past a cap by when the cap last changed (calls in flight included), and its overrun since. */
  slack: bigint
  overrunSince: bigint
}

interface InFlight {
  readonly requestId: string
  readonly user: UserName
  readonly key: KeyName
  readonly hold: bigint
  readonly reader: ReadableStreamDefaultReader<Uint8Array>
  readonly label: string
}

interface Model {
  readonly users: Map<UserName, UserState>
  readonly keys: Map<string, KeyState>
  readonly inFlight: Array<InFlight>
  /** Every request id that must have a usage record. */
  readonly recorded: Set<string>
  readonly kind: "memory" | "sqlite"
}

const keyState = (model: Model, user: UserName, key: KeyName) => model.keys.get(`${user}/${key}`)!

const heldBy = (model: Model, user: UserName, key?: KeyName) =>
  model.inFlight.filter((call) => call.user === user && (key === undefined || call.key === key)).reduce(
    (sum, call) => sum + call.hold,
    0n
  )

const net = (state: UserState) => state.opening + state.topUps - state.charged

/** After a call's record: the charge is the user's and the key's, with what it cost beyond its hold. */
const charge = (model: Model, user: UserName, key: KeyName, cost: bigint, hold: bigint) => {
  const state = model.users.get(user)!
  const k = keyState(model, user, key)
  const over = cost > hold ? cost - hold : 0n
  state.charged += cost
  state.overrun += over
  k.spent += cost
  k.overrunSince += over
}

/** What a record of a call its upstream answered must cost: its figures at the prices (estimates capped at the hold). */
const priced = (record: UsageLog.UsageRecord, hold: bigint): bigint => {
  const cost = Pricing.cost(MODEL, RATIO, record)
  const charge = record.usageReported ? cost : cost < hold ? cost : hold
  return charge > Money.MAX_NANOS ? Money.MAX_NANOS : charge
}

/** The books, after every command. */
const checkBooks = async (model: Model, gateway: Gateway, after: string) => {
  assert.deepStrictEqual(scriptProblems, [], after)
  for (const user of userNames) {
    const state = model.users.get(user)!
    const expected = net(state) - heldBy(model, user)
    assert.strictEqual(
      await gateway.spendable(user),
      expected,
      `${after}: ${user}'s balance is the opening balance plus top-ups minus charges minus what calls in flight hold`
    )
    if (net(state) < 0n) {
      assert.isTrue(
        -net(state) <= state.overrun,
        `${after}: ${user} is ${Money.formatUsd(-net(state))} USD below zero, more than the calls' overrun (${
          Money.formatUsd(state.overrun)
        } USD)`
      )
    }
    for (const key of keyNames) {
      const k = keyState(model, user, key)
      for (const cap of [k.quota, k.daily]) {
        if (cap !== null && k.spent > cap) {
          assert.isTrue(
            k.spent - cap <= k.slack + k.overrunSince,
            `${after}: ${user}/${key} is past its cap by more than calls in flight could take it`
          )
        }
      }
    }
  }
  const { records, distinct } = await gateway.recordCount()
  assert.strictEqual(records, model.recorded.size, `${after}: one usage record per call`)
  assert.strictEqual(distinct, records, `${after}: no request id recorded twice`)
  if (gateway.storeBooks !== undefined) {
    const spent = new Map([...model.keys].map(([name, k]) => [name, k.spent]))
    await gateway.storeBooks(spent)
  }
}

// ---------------------------------------------------------------------------
// Requests on each front door
// ---------------------------------------------------------------------------

const encoder = new TextEncoder()

const requestOf = (door: Door, secret: string, stream: boolean, maxTokens: number, text: string) => {
  const model = modelOf(door)
  switch (door) {
    case "openai":
      return {
        path: "/v1/chat/completions",
        headers: { authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model, stream, max_tokens: maxTokens, messages: [{ role: "user", content: text }] })
      }
    case "responses":
      return {
        path: "/v1/responses",
        headers: { authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model, stream, store: false, max_output_tokens: maxTokens, input: text })
      }
    case "gemini":
      return {
        path: `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
        headers: { "x-goog-api-key": secret },
        body: JSON.stringify({
          contents: [{ role: "user", parts: [{ text }] }],
          generationConfig: { maxOutputTokens: maxTokens }
        })
      }
    case "anthropic":
      return {
        path: "/v1/messages",
        headers: { "x-api-key": secret },
        body: JSON.stringify({ model, stream, max_tokens: maxTokens, messages: [{ role: "user", content: text }] })
      }
  }
}

/** What a call holds: its worst case (the body's bytes, the output asked for), as the gateway computes it. */
const holdOf = (bodyBytes: number, maxTokens: number): bigint =>
  Pricing.worstCase(MODEL, RATIO, {
    promptTokens: Tokens.promptBound(MODEL, bodyBytes),
    outputTokens: Pricing.maxOutputFor(MODEL, maxTokens),
    choices: 1
  })

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

type Real = { readonly gateway: Gateway }
type Command = fc.AsyncCommand<Model, Real>

/**
 * What the client does with an answer: reads it to the end, leaves after the
 * first chunk, leaves before the first byte, or leaves it in flight.
 */
type ClientAction = "read" | "leave" | "gone" | "keep"

interface CallSpec {
  readonly user: UserName
  readonly key: KeyName
  readonly door: Door
  readonly stream: boolean
  readonly maxTokens: number
  readonly padding: number
  readonly attempts: readonly [Attempt, Attempt]
  readonly action: ClientAction
}

const describeAttempt = (attempt: Attempt): string => {
  if (attempt._tag !== "answer") return attempt._tag
  const usage = attempt.usage
  const figures = usage._tag === "missing"
    ? "no usage"
    : `${usage._tag === "malformed" ? "malformed " : ""}${usage.prompt}+${usage.completion}`
  return `answer(${figures}, ${attempt.end})`
}

/** The attempt that answers (the first answer within the two attempts), or undefined when both fail. */
const answering = (spec: CallSpec): Attempt & { readonly _tag: "answer" } | undefined => {
  const first = spec.attempts[0]
  if (first._tag === "answer") return first
  const second = spec.attempts[1]
  return second._tag === "answer" ? second : undefined
}

class Call implements Command {
  readonly spec: CallSpec
  constructor(spec: CallSpec) {
    this.spec = spec
  }

  check = () => true

  async run(model: Model, real: Real) {
    const { spec } = this
    const id = ++nextScript
    const text = `#s${id}# ${"x".repeat(spec.padding)}`
    const request = requestOf(spec.door, secretOf(spec.user, spec.key), spec.stream, spec.maxTokens, text)
    const hold = holdOf(encoder.encode(request.body).length, spec.maxTokens)
    scripts.set(id, [...spec.attempts])
    const client = new AbortController()
    if (spec.action === "gone") leaving.set(id, () => client.abort())
    const response = await real.gateway.handler(
      new Request(`http://gateway.test${request.path}`, {
        method: "POST",
        headers: { ...request.headers, "content-type": "application/json" },
        body: request.body,
        signal: client.signal
      })
    )
    // Not left when no attempt answered (or the call was refused): the answer came first.
    leaving.delete(id)
    const requestId = response.headers.get("x-request-id") ?? ""
    const state = model.users.get(spec.user)!
    const k = keyState(model, spec.user, spec.key)
    const label = this.toString()

    if (k.revoked || state.deleted) {
      saw(state.deleted ? "a deleted user's key refused" : "a revoked key refused")
      // Google answers a key it does not know with 400 (API_KEY_INVALID), the others with 401.
      assert.strictEqual(
        response.status,
        spec.door === "gemini" ? 400 : 401,
        `${label}: a revoked key is refused (and has no usage record)`
      )
      await response.text()
      return
    }

    // Admitted exactly when the balance and the key's caps cover the hold, calls in flight counted.
    const available = net(state) - heldBy(model, spec.user)
    const keyHeld = heldBy(model, spec.user, spec.key)
    const short = available < hold
    const capped = [k.quota, k.daily].some((cap) => cap !== null && k.spent + keyHeld + hold > cap)
    // Every call with a valid key has its record, once it ends (a call in flight when it is cancelled).
    if (!(spec.stream && spec.action === "keep" && answering(spec)?.end === "stall" && !short && !capped)) {
      model.recorded.add(requestId)
    }
    if (short || capped) {
      const body = await response.text()
      assert.include([429, 402], response.status, `${label}: refused for money (${body.slice(0, 300)})`)
      const record = (await real.gateway.record(requestId))!
      const codes = [...(short ? ["InsufficientBalance"] : []), ...(capped ? ["SpendingCapReached"] : [])]
      assert.include(codes, record.errorCode, `${label}: ${record.errorMessage}`)
      assert.strictEqual(record.costNanos, 0n, `${label}: a refused call costs nothing`)
      if (short) saw(net(state) <= 0n ? "refused: the balance at or below zero" : "refused: a hold above the balance")
      if (capped) saw("refused: a key's cap")
      return
    }

    const answer = answering(spec)
    if (answer === undefined) {
      const body = await response.text()
      assert.isAtLeast(response.status, 500, `${label}: no upstream answered (${body.slice(0, 300)})`)
      const record = (await real.gateway.record(requestId))!
      assert.strictEqual(record.costNanos, 0n, `${label}: a call no upstream answered costs nothing, per_request too`)
      saw(
        spec.attempts.every((a) => a._tag === "refused" || a._tag === "timeout")
          ? "never reached an upstream"
          : "upstream failed before the first byte"
      )
      return
    }
    if (spec.action === "gone") {
      assert.strictEqual(response.status, 499, `${label}: the client left before the first byte`)
      const record = (await real.gateway.record(requestId))!
      assert.isDefined(record, `${label}: the call has its record`)
      assert.deepStrictEqual([record.status, record.errorCode], [499, "ClientClosed"], label)
      if (spec.stream) {
        // Cancelled before the upstream's headers came: nothing is known to have reached it.
        assert.strictEqual(record.costNanos, 0n, `${label}: a stream cancelled before its headers costs nothing`)
        saw("gone before the first byte: a stream cancelled")
      } else {
        // The upstream's answer was still read, and charged as a served call is.
        assert.strictEqual(record.costNanos, priced(record, hold), `${label}: charged its figures at the prices`)
        if (answer.usage._tag === "counts") {
          assert.deepStrictEqual(
            [record.usageReported, record.promptTokens, record.completionTokens],
            [true, answer.usage.prompt, answer.usage.completion],
            `${label}: the upstream's usage, read after the client left`
          )
        }
        saw("gone before the first byte: the answer still read and charged")
      }
      charge(model, spec.user, spec.key, record.costNanos, hold)
      return
    }
    assert.strictEqual(response.status, 200, `${label}: served (${response.status})`)
    const stalled = spec.stream && answer.end === "stall"
    const cut = spec.stream && answer.end === "cut"
    const reader = response.body!.getReader()
    if (cut) saw("cut by the upstream")
    if (spec.action === "read" && !stalled) {
      for (;;) if ((await reader.read()).done) break
    } else {
      await reader.read()
      if (spec.action === "keep" && stalled) {
        model.inFlight.push({ requestId, user: spec.user, key: spec.key, hold, reader, label })
        saw("left in flight")
        return
      }
      saw("left by the client")
      await reader.cancel()
    }
    const record = (await real.gateway.record(requestId))!
    assert.isDefined(record, `${label}: the call has its record`)
    const cost = record.costNanos
    assert.strictEqual(cost, priced(record, hold), `${label}: charged its figures at the prices`)
    const complete = !cut && !stalled && (!spec.stream || spec.action === "read")
    if (complete && record.status === 200) {
      const usage = answer.usage
      if (usage._tag === "counts") {
        assert.isTrue(record.usageReported, `${label}: the upstream's usage is believed`)
        assert.deepStrictEqual([record.promptTokens, record.completionTokens], [usage.prompt, usage.completion], label)
        const expected = Pricing.cost(MODEL, RATIO, { promptTokens: usage.prompt, completionTokens: usage.completion })
        assert.strictEqual(cost, expected > Money.MAX_NANOS ? Money.MAX_NANOS : expected, `${label}: what it billed`)
        // Said so when it took the balance below zero or the key past a cap.
        const overdrawn = cost > (available > 0n ? available : 0n)
        const overCap = [k.quota, k.daily].some((cap) => cap !== null && k.spent + cost > cap)
        assert.strictEqual(
          record.errorCode,
          overdrawn ? "BalanceOverdrawn" : overCap ? "SpendingCapOverrun" : null,
          `${label}: ${record.errorMessage}`
        )
        saw(overdrawn ? "served: the balance went below zero" : overCap ? "served: past a key's cap" : "served")
      } else {
        assert.isFalse(record.usageReported, `${label}: counted locally`)
        if (usage._tag === "malformed") assert.strictEqual(record.errorCode, "UsageRejected", label)
        saw(usage._tag === "malformed" ? "usage refused, counted locally" : "no usage, counted locally")
      }
    }
    charge(model, spec.user, spec.key, cost, hold)
  }

  toString() {
    const s = this.spec
    return `Call(${s.user}/${s.key} ${s.door}${s.stream ? " stream" : ""} max=${s.maxTokens} pad=${s.padding} [${
      s.attempts.map(describeAttempt).join(", ")
    }] ${s.action})`
  }
}

class Cancel implements Command {
  readonly index: number
  constructor(index: number) {
    this.index = index
  }
  check = (model: Readonly<Model>) => model.inFlight.length > 0

  async run(model: Model, real: Real) {
    const call = model.inFlight.splice(this.index % model.inFlight.length, 1)[0]!
    await call.reader.cancel()
    model.recorded.add(call.requestId)
    const record = (await real.gateway.record(call.requestId))!
    assert.isDefined(record, `${call.label} cancelled: the call has its record`)
    assert.strictEqual(record.costNanos, priced(record, call.hold), `${call.label} cancelled: charged its figures`)
    saw("in flight, cancelled")
    charge(model, call.user, call.key, record.costNanos, call.hold)
  }

  toString() {
    return `Cancel(${this.index})`
  }
}

class TopUp implements Command {
  readonly user: UserName
  readonly nanos: bigint
  constructor(user: UserName, nanos: bigint) {
    this.user = user
    this.nanos = nanos
  }
  check = (model: Readonly<Model>) => !model.users.get(this.user)!.deleted

  async run(model: Model, real: Real) {
    await real.gateway.topUp(this.user, this.nanos)
    if (net(model.users.get(this.user)!) < 0n) saw("a top-up of a balance below zero")
    model.users.get(this.user)!.topUps += this.nanos
  }

  toString() {
    return `TopUp(${this.user}, ${Money.formatUsd(this.nanos)})`
  }
}

class SetCap implements Command {
  readonly user: UserName
  readonly key: KeyName
  readonly cap: "quota" | "daily"
  readonly nanos: bigint | null
  constructor(user: UserName, key: KeyName, cap: "quota" | "daily", nanos: bigint | null) {
    this.user = user
    this.key = key
    this.cap = cap
    this.nanos = nanos
  }
  check = (model: Readonly<Model>) =>
    !model.users.get(this.user)!.deleted && !model.keys.get(`${this.user}/${this.key}`)!.revoked

  async run(model: Model, real: Real) {
    await real.gateway.setCap(this.user, this.key, this.cap, this.nanos)
    const k = keyState(model, this.user, this.key)
    if (this.cap === "quota") k.quota = this.nanos
    else k.daily = this.nanos
    // From now on a key past its cap may be past it by what it is now, with what its calls in flight hold.
    const caps = [k.quota, k.daily].filter((cap): cap is bigint => cap !== null)
    const lowest = caps.length === 0 ? null : caps.reduce((a, b) => a < b ? a : b)
    const past = lowest === null ? 0n : k.spent + heldBy(model, this.user, this.key) - lowest
    k.slack = past > 0n ? past : 0n
    k.overrunSince = 0n
    saw("a cap changed")
  }

  toString() {
    return `SetCap(${this.user}/${this.key} ${this.cap}=${this.nanos === null ? "none" : Money.formatUsd(this.nanos)})`
  }
}

class Revoke implements Command {
  readonly user: UserName
  readonly key: KeyName
  constructor(user: UserName, key: KeyName) {
    this.user = user
    this.key = key
  }
  check = (model: Readonly<Model>) =>
    !model.users.get(this.user)!.deleted && !model.keys.get(`${this.user}/${this.key}`)!.revoked

  async run(model: Model, real: Real) {
    await real.gateway.revoke(this.user, this.key)
    keyState(model, this.user, this.key).revoked = true
  }

  toString() {
    return `Revoke(${this.user}/${this.key})`
  }
}

class DeleteUser implements Command {
  readonly user: UserName
  constructor(user: UserName) {
    this.user = user
  }
  check = (model: Readonly<Model>) => model.kind === "sqlite" && !model.users.get(this.user)!.deleted

  async run(model: Model, real: Real) {
    await real.gateway.deleteUser!(this.user)
    saw("user deleted")
    model.users.get(this.user)!.deleted = true
    for (const key of keyNames) keyState(model, this.user, key).revoked = true
  }

  toString() {
    return `DeleteUser(${this.user})`
  }
}

/** Cancels what is in flight, then stops the node and starts it again on the same database (the file applied again). */
class Restart implements Command {
  check = (model: Readonly<Model>) => model.kind === "sqlite"

  async run(model: Model, real: Real) {
    while (model.inFlight.length > 0) await new Cancel(0).run(model, real)
    await real.gateway.restart!()
    saw("restarted")
  }

  toString() {
    return "Restart"
  }
}

/** Wraps a command so the books are checked after it. */
class Checked implements Command {
  readonly command: Command
  constructor(command: Command) {
    this.command = command
  }
  check = (model: Readonly<Model>) => this.command.check(model)

  async run(model: Model, real: Real) {
    await this.command.run(model, real)
    await checkBooks(model, real.gateway, `after ${this.command.toString()}`)
  }

  toString() {
    return this.command.toString()
  }
}

// ---------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------

const usageArbitrary: fc.Arbitrary<UsageScript> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({ _tag: fc.constant("counts" as const), prompt: fc.nat(600), completion: fc.nat(80) })
  },
  { weight: 1, arbitrary: fc.constant({ _tag: "counts" as const, prompt: 0, completion: 0 }) },
  {
    weight: 2,
    arbitrary: fc.record({
      _tag: fc.constant("counts" as const),
      // Far beyond every hold: a million tokens ($1), a hundred million ($100), a trillion ($1,000,000).
      prompt: fc.constantFrom(1_000_000, 1_000_000, 100_000_000, 1_000_000_000_000),
      completion: fc.nat(10)
    })
  },
  { weight: 2, arbitrary: fc.constant({ _tag: "missing" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      _tag: fc.constant("malformed" as const),
      prompt: fc.constantFrom(-1_000_000, 1.5, 12),
      completion: fc.constantFrom(-5, 2.5, 3)
    }).filter((u) =>
      !(Number.isInteger(u.prompt) && u.prompt >= 0 && Number.isInteger(u.completion) && u.completion >= 0)
    )
  }
)

const attemptArbitrary: fc.Arbitrary<Attempt> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ _tag: "refused" as const }) },
  { weight: 1, arbitrary: fc.constant({ _tag: "timeout" as const }) },
  { weight: 1, arbitrary: fc.constant({ _tag: "failed" as const }) },
  {
    weight: 8,
    arbitrary: fc.record({
      _tag: fc.constant("answer" as const),
      usage: usageArbitrary,
      end: fc.constantFrom<"complete" | "cut" | "stall">("complete", "complete", "complete", "cut", "stall")
    })
  }
)

const callArbitrary = fc.record({
  user: fc.constantFrom(...userNames),
  key: fc.constantFrom(...keyNames),
  door: fc.constantFrom(...doors),
  stream: fc.boolean(),
  maxTokens: fc.integer({ min: 1, max: 64 }),
  padding: fc.integer({ min: 0, max: 200 }),
  attempts: fc.tuple(attemptArbitrary, attemptArbitrary),
  action: fc.constantFrom<ClientAction>("read", "read", "leave", "gone", "keep")
}).map((spec) => new Call(spec) as Command)

const nanos = (max: bigint) => fc.bigInt({ min: 1n, max })

const commandsArbitrary = (kind: "memory" | "sqlite") => {
  const command: fc.Arbitrary<Command> = fc.oneof(
    { weight: 14, arbitrary: callArbitrary },
    { weight: 2, arbitrary: fc.nat(8).map((i) => new Cancel(i) as Command) },
    {
      weight: 3,
      arbitrary: fc.tuple(
        fc.constantFrom(...userNames),
        fc.oneof(
          { weight: 3, arbitrary: nanos(3_000_000n) },
          { weight: 1, arbitrary: fc.constantFrom(1_500_000_000n, 200_000_000_000n) }
        )
      ).map(([user, amount]) => new TopUp(user, amount) as Command)
    },
    {
      weight: 3,
      arbitrary: fc.tuple(
        fc.constantFrom(...userNames),
        fc.constantFrom(...keyNames),
        fc.constantFrom<"quota" | "daily">("quota", "daily"),
        fc.option(fc.bigInt({ min: 0n, max: 3_000_000n }), { nil: null })
      ).map(([user, key, cap, value]) => new SetCap(user, key, cap, value) as Command)
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...userNames), fc.constantFrom(...keyNames)).map(([user, key]) =>
        new Revoke(user, key) as Command
      )
    },
    ...(kind === "sqlite"
      ? [
        // Only bob is ever deleted, so every run keeps a user whose calls go on.
        { weight: 1, arbitrary: fc.constant(new DeleteUser("bob") as Command) },
        { weight: 2, arbitrary: fc.constant(new Restart() as Command) }
      ]
      : [])
  )
  return fc.commands([command.map((c) => new Checked(c) as Command)], { maxCommands: MAX_COMMANDS, size: "max" })
}

const openingArbitrary: fc.Arbitrary<Opening> = fc.record({
  balances: fc.record({ ann: fc.bigInt({ min: 0n, max: 3_000_000n }), bob: fc.bigInt({ min: 0n, max: 3_000_000n }) }),
  caps: fc.record({ ann: fc.bigInt({ min: 0n, max: 3_000_000n }), bob: fc.bigInt({ min: 0n, max: 3_000_000n }) })
})

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

let fake: FakeUpstreamServer

beforeAll(async () => {
  fake = await startFakeUpstream({ maxRecordedRequests: 0 })
})

afterAll(async () => {
  await fake?.close()
})

const modelOfOpening = (kind: "memory" | "sqlite", opening: Opening): Model => ({
  kind,
  users: new Map(userNames.map((user) => [user, {
    opening: opening.balances[user],
    topUps: 0n,
    charged: 0n,
    overrun: 0n,
    deleted: false
  }])),
  keys: new Map(userNames.flatMap((user) =>
    keyNames.map((key) => [`${user}/${key}`, {
      quota: key === "capped" ? opening.caps[user] : null,
      daily: null,
      revoked: false,
      spent: 0n,
      slack: 0n,
      overrunSince: 0n
    }])
  )),
  inFlight: [],
  recorded: new Set()
})

const property = (kind: "memory" | "sqlite") =>
  fc.asyncProperty(openingArbitrary, commandsArbitrary(kind), async (opening, commands) => {
    scriptProblems.length = 0
    const gateway = kind === "memory"
      ? await memoryGateway(fake.url, opening)
      : await sqliteGateway(fake.url, opening)
    const model = modelOfOpening(kind, opening)
    try {
      await checkBooks(model, gateway, "the start")
      await fc.asyncModelRun(() => ({ model, real: { gateway } }), commands)
      // At the end: what is still in flight is cancelled, and the books hold.
      while (model.inFlight.length > 0) await new Cancel(0).run(model, { gateway })
      await checkBooks(model, gateway, "the end")
    } finally {
      for (const call of model.inFlight) await call.reader.cancel().catch(() => undefined)
      await gateway.dispose()
    }
  })

/** What each store's runs must have gone through at least once, with the CI seed and runs. */
const expected = (kind: "memory" | "sqlite") => [
  "served",
  "served: the balance went below zero",
  "served: past a key's cap",
  "refused: the balance at or below zero",
  "refused: a hold above the balance",
  "refused: a key's cap",
  "never reached an upstream",
  "upstream failed before the first byte",
  "no usage, counted locally",
  "usage refused, counted locally",
  "cut by the upstream",
  "left by the client",
  "gone before the first byte: the answer still read and charged",
  "gone before the first byte: a stream cancelled",
  "left in flight",
  "in flight, cancelled",
  "a top-up of a balance below zero",
  "a cap changed",
  "a revoked key refused",
  ...(kind === "sqlite" ? ["restarted", "user deleted", "a deleted user's key refused"] : [])
]

/** Runs `f` with the console silent: the gateway's own log lines would drown the report. */
const quietly = async <A>(f: () => Promise<A>): Promise<A> => {
  const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug }
  const silent = () => undefined
  Object.assign(console, { log: silent, info: silent, warn: silent, error: silent, debug: silent })
  try {
    return await f()
  } finally {
    Object.assign(console, saved)
  }
}

const runProperty = async (kind: "memory" | "sqlite", numRuns: number) => {
  seen.clear()
  const started = Date.now()
  await quietly(() => fc.assert(property(kind), { numRuns, seed: SEED }))
  const report = [...seen].sort(([a], [b]) => a.localeCompare(b)).map(([what, n]) => `  ${what}: ${n}`).join("\n")
  process.stdout.write(
    `books (${kind}): ${numRuns} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n${report}\n`
  )
  if (RUNS === 0) {
    for (const what of expected(kind)) assert.isAbove(seen.get(what) ?? 0, 0, `the runs went through: ${what}`)
  }
}

describe("the books match the upstream's bill (model-based)", () => {
  it(
    `on the embedded store: ${memoryRuns} runs of up to ${MAX_COMMANDS} commands (seed ${SEED})`,
    () => runProperty("memory", memoryRuns),
    900_000
  )

  it(
    `on SQLite, with restarts: ${sqliteRuns} runs of up to ${MAX_COMMANDS} commands (seed ${SEED})`,
    () => runProperty("sqlite", sqliteRuns),
    900_000
  )
})

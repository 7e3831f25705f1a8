/**
 * Test wiring: the real store on a fresh SQLite file, this package's layer,
 * and test layers for the core ports node-http implements (a catalog that
 * reloads from the database on every read, an invalidation log, a probe that
 * answers from a table). `Client` drives `AdminApi.handle` the way a browser
 * or a script would: cookies, CSRF header, bearer keys.
 */
import {
  Catalog as CatalogModule,
  ChannelHealth,
  ChannelProbe,
  Domain,
  GatewayError,
  Invalidation,
  type UsageLog
} from "@modelgate/core"
import { Catalog } from "@modelgate/core/domain/Catalog"
import { Accounts } from "@modelgate/store/Accounts"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import * as Store from "@modelgate/store/Store"
import { Users } from "@modelgate/store/Users"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AdminApi } from "../src/AdminApi.ts"

/** Topics announced through `Invalidation`, in order, and with the ids they named (`null`: all). */
export class InvalidationLog extends Context.Service<InvalidationLog, {
  readonly topics: Array<string>
  readonly changes: Array<{ readonly topic: string; readonly ids: ReadonlyArray<string> | null }>
}>()(
  "test/InvalidationLog"
) {}

const invalidationLayer = Layer.effect(
  Invalidation.Invalidation,
  Effect.gen(function*() {
    const log = yield* InvalidationLog
    return Invalidation.Invalidation.of({
      invalidate: (topic, ids) =>
        Effect.sync(() => {
          log.topics.push(topic)
          log.changes.push({ topic, ids: ids ?? null })
        })
    })
  })
).pipe(Layer.provideMerge(Layer.sync(InvalidationLog, () => ({ topics: [], changes: [] }))))

const catalogLayer = Layer.effect(
  Catalog,
  Effect.gen(function*() {
    const repo = yield* CatalogRepo
    return Catalog.of({ current: Effect.map(Effect.orDie(repo.load), CatalogModule.makeSnapshot) })
  })
)

/** A probe that succeeds for channels whose base URL contains "good" and reports an upstream 401 otherwise. */
const probeOf = (channel: Domain.Channel, model: string | undefined): ChannelProbe.ProbeResult =>
  channel.baseUrl.includes("good")
    ? {
      ok: true,
      latencyMs: 42,
      status: 200,
      message: `Hello from ${model ?? channel.models[0]}`,
      upstreamMessage: null,
      credentialsRefused: false
    }
    : {
      ok: false,
      latencyMs: 7,
      status: 401,
      message: "Incorrect API key provided",
      upstreamMessage: "Incorrect API key provided",
      credentialsRefused: true
    }

/**
 * Model lists: a "good" channel lists `gpt-test` (priced by the seed), `gpt-4.1-mini` (in the shipped price
 * table) and `brand-new-model`, as read with the key it was asked with; an Azure channel cannot list; others
 * are refused with a 401.
 */
export const listedBy = new Map<string, string>()
const probeLayer = Layer.succeed(ChannelProbe.ChannelProbe)({
  probe: (channel, model) => Effect.succeed(probeOf(channel, model)),
  checkKey: (channel) => Effect.succeed(probeOf(channel, undefined)),
  listModels: (channel, apiKey) => {
    listedBy.set(channel.baseUrl, apiKey ?? channel.apiKeys[0] ?? "")
    if (channel.type === "azure") {
      return Effect.fail(
        new GatewayError.UnsupportedFeature({
          message: `The channel '${channel.name}' is Azure OpenAI: type the deployment names.`
        })
      )
    }
    if (!channel.baseUrl.includes("good")) {
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({
          message: `The upstream '${channel.name}' refused the key. The upstream said: Incorrect API key provided`
        })
      )
    }
    return Effect.succeed([
      { id: "brand-new-model", displayName: "Brand New", inputTokenLimit: 32_000 },
      { id: "gpt-4.1-mini" },
      { id: "gpt-test", outputTokenLimit: 8_000 },
      { id: "text-embed-test", embedding: true }
    ])
  }
})

/**
 * Key health as a test sets it: `states` maps an upstream key (the secret, as
 * the gateway's health service sees it) to its report; keys not in it are
 * healthy. `reset` forgets a channel's keys, as the real service re-enables them.
 */
export class HealthBoard extends Context.Service<HealthBoard, {
  readonly states: Map<string, Omit<ChannelHealth.KeyHealth, "index" | "hint">>
  /** Models kept off a channel, by the channel's name. */
  readonly refused: Map<string, ReadonlyArray<ChannelHealth.RefusedModel>>
}>()("test/HealthBoard") {}

const healthLayer = Layer.effect(
  ChannelHealth.ChannelHealth,
  Effect.gen(function*() {
    const board = yield* HealthBoard
    return ChannelHealth.ChannelHealth.of({
      report: (channel) =>
        Effect.sync(() => {
          const keys = channel.apiKeys.map((key, index) => ({
            ...ChannelHealth.unseenKey(index, `…${key.slice(-4)}`),
            ...board.states.get(key)
          }))
          const refusedModels = board.refused.get(channel.name) ?? []
          return { state: ChannelHealth.channelStateOf(keys, refusedModels.length), keys, refusedModels }
        }),
      reset: (channel) =>
        Effect.sync(() => {
          channel.apiKeys.forEach((key) => board.states.delete(key))
          board.refused.delete(channel.name)
        }),
      // As the health service does: a key that works is healthy again, one that is refused is disabled.
      test: (channel, model) =>
        Effect.sync(() =>
          channel.apiKeys.map((key, index) => {
            const result = probeOf(channel, model)
            if (result.ok) board.states.delete(key)
            else {board.states.set(key, {
                ...ChannelHealth.unseenKey(index, ""),
                state: "disabled",
                reason: `HTTP 401: ${result.message}`,
                status: 401,
                since: 1
              })}
            return { ...result, index, hint: `…${key.slice(-4)}` }
          })
        )
    })
  })
).pipe(Layer.provideMerge(Layer.sync(HealthBoard, () => ({ states: new Map(), refused: new Map() }))))

/** The whole graph on a fresh SQLite database, removed afterwards. */
export const testLayer = (options: Parameters<typeof AdminApi.layer>[0] = {}) =>
  Layer.unwrap(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-admin-api-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => {
      const store = Store.layer({
        url: `sqlite:${join(dir, "test.db")}`,
        masterKey: { secret: Redacted.make("admin api test secret, long enough") },
        nodeId: "test"
      }).pipe(Layer.orDie)
      const ports = Layer.mergeAll(catalogLayer, invalidationLayer, probeLayer, healthLayer)
      return AdminApi.layer(options).pipe(Layer.provideMerge(ports), Layer.provideMerge(store))
    }
  ))

/** A decoded response. */
export interface Reply {
  readonly status: number
  readonly body: any
  readonly text: string
  readonly headers: Headers
}

/** Runs one request through `handle`. */
export const send = (request: Request, remoteAddress = "127.0.0.1") =>
  Effect.gen(function*() {
    const serverRequest = HttpServerRequest.fromWeb(request).modify({ remoteAddress: Option.some(remoteAddress) })
    const response = yield* (yield* AdminApi).handle(serverRequest)
    const web = HttpServerResponse.toWeb(response)
    const text = yield* Effect.promise(() => web.text())
    let body: unknown = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: web.status, body, text, headers: web.headers } satisfies Reply as Reply
  })

let clients = 0

/**
 * A browser-like client: keeps the session cookie and sends the CSRF token; or
 * a script with a bearer key. Each client comes from an address of its own
 * (so one test's wrong passwords never count against another's sign-ins); set
 * `address` to choose one.
 */
export class Client {
  cookie: string | undefined = undefined
  csrf: string | undefined = undefined
  bearer: string | undefined = undefined
  address = `10.200.${(++clients >> 8) & 255}.${clients & 255}`

  request(method: string, path: string, body?: unknown, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = { ...extra }
    if (this.cookie !== undefined) headers["cookie"] = this.cookie
    if (this.csrf !== undefined && method !== "GET") headers["x-csrf-token"] ??= this.csrf
    if (this.bearer !== undefined) headers["authorization"] = `Bearer ${this.bearer}`
    if (body !== undefined) headers["content-type"] = "application/json"
    const init: RequestInit = { method, headers }
    if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body)
    return Effect.tap(
      send(new Request(`http://gateway.test${path}`, init), this.address),
      (reply) =>
        Effect.sync(() => {
          const setCookie = reply.headers.get("set-cookie")
          if (setCookie !== null) {
            const value = /mg_session=([^;]*)/.exec(setCookie)?.[1] ?? ""
            this.cookie = value === "" ? undefined : `mg_session=${value}`
          }
        })
    )
  }

  get(path: string) {
    return this.request("GET", path)
  }
  post(path: string, body?: unknown) {
    return this.request("POST", path, body ?? {})
  }
  patch(path: string, body: unknown) {
    return this.request("PATCH", path, body)
  }
  delete(path: string) {
    return this.request("DELETE", path)
  }

  /** Signs in and remembers the cookie and CSRF token. */
  login(username: string, password: string) {
    return Effect.tap(this.post("/api/auth/login", { username, password }), (reply) =>
      Effect.sync(() => {
        if (reply.status === 200) this.csrf = reply.body.csrfToken
      }))
  }
}

let counter = 0

/** Creates a user directly in the store, with an optional opening balance (USD nanos). */
export const makeUser = Effect.fnUntraced(function*(
  options: { readonly role?: "user" | "admin"; readonly balanceNanos?: bigint; readonly password?: string } = {}
) {
  const users = yield* Users
  const name = `user${Date.now().toString(36)}${counter++}`
  const password = options.password ?? "correct horse battery"
  const user = yield* users.create({ name, role: options.role ?? "user", password: Redacted.make(password) })
  if (options.balanceNanos !== undefined && options.balanceNanos > 0n) {
    yield* (yield* Accounts).topUp(user.id, options.balanceNanos, "test", "tester")
  }
  return { ...user, password }
})

/** A signed-in client for a new user. */
export const signedIn = Effect.fnUntraced(function*(
  options: { readonly role?: "user" | "admin"; readonly balanceNanos?: bigint } = {}
) {
  const user = yield* makeUser(options)
  const client = new Client()
  const reply = yield* client.login(user.name, user.password)
  if (reply.status !== 200) return yield* Effect.die(new Error(`login failed: ${reply.text}`))
  return { user, client }
})

/** Seeds a model, a selectable "default" group and a channel serving it. */
export const seedCatalog = Effect.gen(function*() {
  const repo = yield* CatalogRepo
  yield* repo.upsertModel({
    id: "gpt-test",
    displayName: "GPT Test",
    inputNanosPerMillion: 2_000_000_000n,
    outputNanosPerMillion: 8_000_000_000n,
    cachedInputNanosPerMillion: null,
    perRequestNanos: null,
    free: false,
    inputTokenLimit: 128000,
    outputTokenLimit: 4096
  })
  yield* repo.upsertModel({
    id: "gemini-test",
    displayName: "Gemini Test",
    inputNanosPerMillion: 1_000_000_000n,
    outputNanosPerMillion: 4_000_000_000n,
    cachedInputNanosPerMillion: null,
    perRequestNanos: null,
    free: false,
    inputTokenLimit: 1000000,
    outputTokenLimit: 8192
  })
  yield* repo.upsertGroup({
    name: "default",
    ratioMicros: 1_000_000n,
    limits: { rpm: null, tpm: null, concurrency: null },
    selectable: true
  })
  yield* repo.upsertGroup({
    name: "vip",
    ratioMicros: 500_000n,
    limits: { rpm: 600, tpm: null, concurrency: 4 },
    selectable: false
  })
  yield* repo.upsertChannel({
    name: "seed-openai",
    type: "openai",
    baseUrl: "http://good.upstream.test",
    apiKeys: ["sk-upstream-secret-1234"],
    models: ["gpt-test", "gemini-test"],
    modelMap: {},
    groups: ["default", "vip"],
    priority: 0,
    weight: 1,
    enabled: true,
    ...Domain.channelDefaults,
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000, totalMs: 1000 }
  })
})

/** Inserts a usage record directly (as the gateway's usage writer would). */
export const insertUsage = Effect.fnUntraced(function*(record: {
  readonly userId: string
  readonly keyId: string
  readonly model: string
  readonly costNanos: bigint
  readonly createdAt: number
  readonly promptTokens?: number
  readonly completionTokens?: number
  readonly reasoningTokens?: number
  readonly attemptLog?: ReadonlyArray<UsageLog.Attempt>
  readonly cacheWriteTokens?: number
  readonly note?: string
  readonly requestId?: string
  readonly channel?: string
  readonly upstreamModel?: string
  readonly dialectIn?: "openai" | "gemini" | "anthropic"
  readonly stream?: boolean
  readonly status?: number
  readonly errorCode?: string | null
  readonly errorMessage?: string | null
  readonly ttfbMs?: number | null
}) {
  const sql = yield* SqlClient.SqlClient
  const requestId = record.requestId ?? `req_${counter}`
  yield* sql`INSERT INTO usage_records ${
    sql.insert({
      id: `use_${Math.random().toString(36).slice(2)}${counter++}`,
      created_at: record.createdAt,
      request_id: requestId,
      user_id: record.userId,
      key_id: record.keyId,
      model: record.model,
      upstream_model: record.upstreamModel ?? record.model,
      channel: record.channel ?? "seed-openai",
      dialect_in: record.dialectIn ?? "openai",
      dialect_out: "openai",
      stream: record.stream ?? false,
      prompt_tokens: record.promptTokens ?? 100,
      completion_tokens: record.completionTokens ?? 50,
      cached_tokens: 0,
      cache_write_tokens: record.cacheWriteTokens ?? 0,
      note: record.note ?? null,
      reasoning_tokens: record.reasoningTokens ?? 0,
      usage_reported: true,
      cost_nanos: record.costNanos,
      latency_ms: 120,
      ttfb_ms: record.ttfbMs ?? null,
      status: record.status ?? 200,
      error_code: record.errorCode ?? null,
      error_message: record.errorMessage ?? null,
      attempts: record.attemptLog === undefined ? 1 : record.attemptLog.length,
      attempt_log: record.attemptLog === undefined ? null : JSON.stringify(record.attemptLog)
    })
  }`
  return requestId
})

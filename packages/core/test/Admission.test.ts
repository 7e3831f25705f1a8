import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { allowedModels, authenticate, authorize, ClientDialect } from "../src/admission/Admission.ts"
import { KeyStore } from "../src/admission/KeyStore.ts"
import { Catalog, makeSnapshot } from "../src/domain/Catalog.ts"
import * as Domain from "../src/domain/Domain.ts"
import type { ApiKey, Channel, Model } from "../src/domain/Domain.ts"

const model = (id: string, over: Partial<Model> = {}): Model => ({
  id,
  displayName: id,
  inputNanosPerMillion: 100n,
  outputNanosPerMillion: 100n,
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 1000,
  outputTokenLimit: 1000,
  ...over
})

const channel = (name: string, models: Array<string>, groups: Array<string>, priority = 0): Channel => ({
  id: name,
  name,
  type: "openai",
  baseUrl: "http://127.0.0.1:1/v1",
  apiKeys: ["sk-up"],
  models,
  modelMap: {},
  groups,
  priority,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000, totalMs: 1000 }
})

const key = (over: Partial<ApiKey> = {}): ApiKey => ({
  id: "key_1",
  name: "laptop",
  prefix: "sk-abcdefg",
  userId: "usr_1",
  userName: "alice",
  userRole: "user",
  userEnabled: true,
  group: "default",
  models: [],
  expiresAt: null,
  enabled: true,
  quotaNanos: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
  limits: { rpm: null, tpm: null, concurrency: null },
  userLimits: { rpm: null, tpm: null, concurrency: null },
  ...over
})

const snapshot = makeSnapshot({
  models: [
    model("gpt-4o-mini"),
    model("gpt-4o"),
    model("gemini-2.5-flash"),
    model("unpriced", { inputNanosPerMillion: null, outputNanosPerMillion: null }),
    model("gemini-embedding-001", { embedding: true })
  ],
  groups: [{ name: "default", ratioMicros: 1_000_000n, limits: { rpm: null, tpm: null, concurrency: null } }],
  channels: [
    channel("low", ["gpt-4o-mini"], ["default"], 0),
    channel("high", ["gpt-4o-mini", "unpriced"], ["default"], 10),
    channel("vip-only", ["gpt-4o"], ["vip"]),
    channel("gemini", ["gemini-2.5-flash", "gemini-embedding-001"], ["default"]),
    // A channel model nobody priced: no row under models at all.
    channel("fresh", ["brand-new-model"], ["default"])
  ],
  aliases: [{ pattern: "gemini-*", target: "gemini-2.5-flash" }, {
    pattern: "*embedding*",
    target: "gemini-embedding-001"
  }]
})

const keys = new Map<string, ApiKey>([
  ["sk-good", key()],
  ["sk-off", key({ enabled: false })],
  ["sk-user-off", key({ userEnabled: false })],
  ["sk-expiring", key({ expiresAt: 60_000 })],
  ["sk-narrow", key({ models: ["gpt-4o-mini"] })]
])

const TestLayer = Layer.mergeAll(
  Layer.succeed(KeyStore)({ lookup: (secret) => Effect.succeed(keys.get(secret)) }),
  Layer.succeed(Catalog)({ current: Effect.succeed(snapshot) })
)

const tagOf = <A, E extends { _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.map((r) => ("error" in r ? (r.error as E)._tag : r._tag))[0] : "Success"

describe("Admission", () => {
  it.effect("tells missing, unknown, disabled and expired keys apart", () =>
    Effect.gen(function*() {
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate(undefined))), "MissingApiKey")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate(""))), "MissingApiKey")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate("sk-nope-nope"))), "InvalidApiKey")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate("sk-off"))), "KeyDisabled")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate("sk-user-off"))), "KeyDisabled")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate("sk-expiring"))), "Success")
      yield* TestClock.adjust("2 minutes")
      assert.strictEqual(tagOf(yield* Effect.exit(authenticate("sk-expiring"))), "KeyExpired")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("never echoes a whole unknown key in the message", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(authenticate("sk-secret-that-is-long"))
      assert.notInclude(error.message, "sk-secret-that-is-long")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("checks model, permission, group and price in that order", () =>
    Effect.gen(function*() {
      assert.strictEqual(tagOf(yield* Effect.exit(authorize(key(), "nope"))), "ModelNotFound")
      assert.strictEqual(
        tagOf(yield* Effect.exit(authorize(key({ models: ["gpt-4o-mini"] }), "gpt-4o"))),
        "ModelNotAllowed"
      )
      assert.strictEqual(tagOf(yield* Effect.exit(authorize(key(), "gpt-4o"))), "ModelNotInGroup")
      assert.strictEqual(tagOf(yield* Effect.exit(authorize(key(), "unpriced"))), "ModelUnpriced")
      const route = yield* authorize(key(), "gpt-4o-mini")
      assert.deepStrictEqual(route.channels.map((c) => c.name), ["high", "low"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("refuses a model a channel serves without a price as unpriced, not unknown", () =>
    Effect.gen(function*() {
      const refusal = yield* Effect.flip(authorize(key(), "brand-new-model"))
      assert.strictEqual(refusal._tag, "ModelUnpriced")
      assert.include(refusal.message, "no price configured")
      assert.strictEqual(tagOf(yield* Effect.exit(authorize(key(), "models/brand-new-model"))), "ModelUnpriced")
      // It is still outside a narrower key's permissions, and it is never listed.
      assert.strictEqual(
        tagOf(yield* Effect.exit(authorize(key({ models: ["gpt-4o-mini"] }), "brand-new-model"))),
        "ModelNotAllowed"
      )
      assert.notInclude(allowedModels(snapshot, key()).map((m) => m.id), "brand-new-model")
      assert.deepStrictEqual(snapshot.unpriced, ["brand-new-model"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("quotes an unknown model name back cut at 200 characters, never a 200 KB one whole", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(authorize(key(), "m".repeat(200_000)))
      assert.strictEqual(error._tag, "ModelNotFound")
      assert.include(error.message, `'${"m".repeat(200)}…'`)
      assert.isBelow(error.message.length, 400)
      assert.isBelow((error as { model: string }).model.length, 300)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("resolves the models/ prefix and aliases", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* authorize(key(), "models/gpt-4o-mini")).model.id, "gpt-4o-mini")
      assert.strictEqual((yield* authorize(key(), "gemini-3-pro-preview")).model.id, "gemini-2.5-flash")
      assert.strictEqual((yield* authorize(key(), "models/gemini-2.0")).model.id, "gemini-2.5-flash")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("resolves an alias only to a model of the call's use: a chat alias never catches an embedding name", () =>
    Effect.gen(function*() {
      // `gemini-*` names a chat model: an embeddings call to an unknown gemini-* name is not served by it...
      assert.strictEqual(tagOf(yield* Effect.exit(authorize(key(), "gemini-embed-2", "embed"))), "ModelNotFound")
      assert.strictEqual((yield* authorize(key(), "gemini-3-pro-preview", "generate")).model.id, "gemini-2.5-flash")
      // ...but the next matching alias whose target embeds is, and the reverse holds too.
      assert.strictEqual((yield* authorize(key(), "gemini-embedding-002", "embed")).model.id, "gemini-embedding-001")
      assert.strictEqual((yield* authorize(key(), "text-embedding-3-small", "embed")).model.id, "gemini-embedding-001")
      assert.strictEqual(
        tagOf(yield* Effect.exit(authorize(key(), "text-embedding-3-small", "generate"))),
        "ModelNotFound"
      )
      // A model's own name resolves whatever the use (the call then decides what it can do with it).
      assert.strictEqual((yield* authorize(key(), "gemini-embedding-001", "embed")).model.id, "gemini-embedding-001")
      assert.strictEqual(
        (yield* authorize(key(), "models/gemini-embedding-001", "generate")).model.id,
        "gemini-embedding-001"
      )
    }).pipe(Effect.provide(TestLayer)))

  it.effect("points each dialect's clients at their own models list", () =>
    Effect.gen(function*() {
      const openai = yield* Effect.flip(authorize(key(), "nope"))
      assert.include(openai.message, "GET /v1/models")
      const gemini = yield* Effect.flip(authorize(key(), "nope").pipe(Effect.provideService(ClientDialect, "gemini")))
      assert.include(gemini.message, "GET /v1beta/models")
      assert.notInclude(gemini.message, "/v1/models")
      const group = yield* Effect.flip(authorize(key(), "gpt-4o").pipe(Effect.provideService(ClientDialect, "gemini")))
      assert.strictEqual(group._tag, "ModelNotInGroup")
      assert.include(group.message, "GET /v1beta/models")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("lists exactly what a key may call, and authorize agrees", () =>
    Effect.gen(function*() {
      // "unpriced" is served to the group but refused at call time, so it is not listed either.
      for (const candidate of [key(), key({ models: ["gpt-4o-mini", "gpt-4o"] }), key({ group: "vip" })]) {
        const listed = allowedModels(snapshot, candidate).map((m) => m.id)
        for (const id of ["gpt-4o-mini", "gpt-4o", "gemini-2.5-flash", "unpriced"]) {
          const admitted = (yield* Effect.exit(authorize(candidate, id)))._tag === "Success"
          assert.strictEqual(
            listed.includes(id),
            admitted,
            `${id} for ${candidate.group}/${candidate.models.join(",")}`
          )
        }
      }
    }).pipe(Effect.provide(TestLayer)))

  it("lists exactly what a key may call", () => {
    assert.deepStrictEqual(allowedModels(snapshot, key()).map((m) => m.id), [
      "gpt-4o-mini",
      "gemini-2.5-flash",
      "gemini-embedding-001"
    ])
    assert.deepStrictEqual(allowedModels(snapshot, key({ models: ["gpt-4o-mini", "gpt-4o"] })).map((m) => m.id), [
      "gpt-4o-mini"
    ])
    assert.deepStrictEqual(allowedModels(snapshot, key({ group: "vip" })).map((m) => m.id), ["gpt-4o"])
  })
})

/**
 * Configuration errors name the file, the field's path in the file and what
 * was expected, whether the Schema, the settings or the store finds them; the
 * environment overrides `listen` and `database`, and an empty variable counts
 * as unset.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Store from "@modelgate/store/Store"
import { Effect, Layer, Redacted } from "effect"
import * as ConfigFile from "../src/ConfigFile.ts"
import * as Provision from "../src/Provision.ts"
import { resolveSettings } from "../src/Settings.ts"

const SOURCE = "gateway.yaml"

const parseError = (yaml: string) => Effect.flip(ConfigFile.parse(yaml, SOURCE))

const settings = (file: ConfigFile.ConfigFile, env: Record<string, string | undefined> = {}) =>
  resolveSettings(file, env, { consoleDir: null, source: SOURCE })

describe("configuration errors", () => {
  it.effect("a key secret must start with sk- and be long enough, and the message says so without echoing it", () =>
    Effect.gen(function*() {
      for (const secret of ["pk-abcdefghijklmnopqrstuvwxyz", "sk-short", "sk-has a space in the middle"]) {
        const error = yield* parseError(`users:\n  - name: a\n    keys:\n      - {name: k, secret: "${secret}"}\n`)
        assert.strictEqual(
          error.message,
          "Invalid configuration in gateway.yaml:\n  at users[0].keys[0].secret: Expected a key secret: 'sk-' followed by at least 17 more characters (20 or more in all), without spaces"
        )
      }
      const ok = yield* ConfigFile.parse(
        "users:\n  - name: a\n    keys:\n      - {name: k, secret: sk-abcdefghijklmnopq}\n",
        SOURCE
      )
      assert.strictEqual(ok.users?.[0]?.keys?.[0]?.secret, "sk-abcdefghijklmnopq")
    }))

  it.effect("a console password must have 8 to 256 characters, and the message names the field and the rule without echoing it", () =>
    Effect.gen(function*() {
      for (const password of ["a", "seven77", "x".repeat(257)]) {
        const error = yield* parseError(`users:\n  - {name: admin, role: admin, password: "${password}"}\n`)
        assert.strictEqual(
          error.message,
          "Invalid configuration in gateway.yaml:\n  at users[0].password: Expected a console password of 8 to 256 characters"
        )
      }
      const ok = yield* ConfigFile.parse("users:\n  - {name: admin, password: eight888}\n", SOURCE)
      assert.strictEqual(ok.users?.[0]?.password, "eight888")
    }))

  it.effect("the store refuses a short password too, naming the field", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Provision.apply({ users: [{ name: "a", password: "a" }] }, { configSource: SOURCE } as never)
      ).pipe(
        Effect.provide(
          Layer.fresh(
            Store.layer({
              url: "sqlite::memory:",
              masterKey: { secret: Redacted.make("config-test-secret-0123456789") },
              nodeId: "t"
            })
          )
        )
      )
      assert.strictEqual(
        error.message,
        "Invalid configuration in gateway.yaml:\n  at users[0].password: a console password needs 8 to 256 characters (this one has 1)"
      )
    }))

  it.effect("a weak MODELGATE_SECRET is refused, naming the variable and the rule", () =>
    Effect.gen(function*() {
      const repeated = yield* Effect.flip(settings({}, { MODELGATE_SECRET: "aaaaaaaaaaaaaaaa" }))
      assert.strictEqual(
        repeated.message,
        "Invalid MODELGATE_SECRET: too weak: a server secret needs at least 16 characters, at least 8 of them different (it has only 1 different). Generate one with: openssl rand -base64 32"
      )
      const short = yield* Effect.flip(settings({}, { MODELGATE_SECRET: "short-secret" }))
      assert.include(short.message, "Invalid MODELGATE_SECRET: too weak")
      assert.include(short.message, "(it has 12)")
      const good = yield* settings({}, { MODELGATE_SECRET: "a strong server secret" })
      assert.isNotNull(good.secret)
    }))

  it.effect("wrong types and unknown fields name the path and what was expected", () =>
    Effect.gen(function*() {
      const error = yield* parseError(
        "listen: 5\nchannels:\n  - {name: x, type: opneai, base_url: u, models: [a]}\nusers:\n  - {name: a, bogus: 1}\n"
      )
      assert.include(error.message, "Invalid configuration in gateway.yaml:")
      assert.include(error.message, "at listen: Expected string")
      assert.include(error.message, "at channels[0].type: Expected \"openai\" | \"gemini\" | \"anthropic\" | \"azure\"")
      assert.include(
        error.message,
        "at users[0].bogus: Unknown field (check its spelling; docs/configuration.md lists every field)"
      )
    }))

  it.effect("a bad database or listen value names the file, the field and the accepted forms", () =>
    Effect.gen(function*() {
      const database = yield* Effect.flip(settings({ database: "mysql://db/x" }))
      assert.match(database.message, /^Invalid configuration in gateway\.yaml:\n {2}at database: /)
      assert.include(database.message, "Accepted forms: 'sqlite:PATH'")
      const listen = yield* Effect.flip(settings({ listen: "localhost" }))
      assert.strictEqual(
        listen.message,
        "Invalid configuration in gateway.yaml:\n  at listen: expected HOST:PORT such as 127.0.0.1:8080, got 'localhost'"
      )
      const fromEnv = yield* Effect.flip(settings({}, { MODELGATE_DATABASE: "sqlite:" }))
      assert.match(fromEnv.message, /^Invalid MODELGATE_DATABASE: The database URL 'sqlite:' has no file path/)
      const listenEnv = yield* Effect.flip(settings({}, { MODELGATE_LISTEN: "host:port" }))
      assert.strictEqual(
        listenEnv.message,
        "Invalid MODELGATE_LISTEN: expected HOST:PORT such as 127.0.0.1:8080, got 'host:port'"
      )
    }))
})

describe("environment overrides", () => {
  it.effect("MODELGATE_LISTEN and MODELGATE_DATABASE override the file", () =>
    Effect.gen(function*() {
      const file: ConfigFile.ConfigFile = { listen: "127.0.0.1:8080", database: "sqlite:from-file.db" }
      const resolved = yield* settings(file, {
        MODELGATE_LISTEN: "0.0.0.0:9999",
        MODELGATE_DATABASE: "postgres://u@db:5432/x"
      })
      assert.deepStrictEqual([resolved.host, resolved.port, resolved.database], [
        "0.0.0.0",
        9999,
        "postgres://u@db:5432/x"
      ])
    }))

  it.effect("an empty variable counts as unset, for every variable alike", () =>
    Effect.gen(function*() {
      const file: ConfigFile.ConfigFile = {
        listen: "127.0.0.1:8181",
        database: "sqlite:from-file.db",
        redis: "redis://file:6379"
      }
      const resolved = yield* settings(file, {
        MODELGATE_LISTEN: "",
        MODELGATE_DATABASE: "",
        MODELGATE_REDIS: "",
        MODELGATE_SECRET: ""
      })
      assert.deepStrictEqual(
        [resolved.port, resolved.database, resolved.redis, resolved.secret],
        [8181, "sqlite:from-file.db", "redis://file:6379", null]
      )
    }))
})

describe("the store's refusals, in the file's terms", () => {
  const input = {
    users: [{ name: "a" }, { name: "b" }],
    groups: [{ name: "vip", ratioMicros: 1n }, { name: "default", ratioMicros: 1n }],
    models: [{ id: "gpt-4o" }],
    aliases: [{ pattern: "gpt-*", target: "gpt-4o" }],
    keys: [{ user: "a", name: "x", group: "default" }, { user: "b", name: "y", group: "default" }, {
      user: "b",
      name: "z",
      group: "default"
    }]
  } as never
  const file: ConfigFile.ConfigFile = {
    users: [{ name: "a", keys: [{ name: "x" }] }, { name: "b", keys: [{ name: "y" }, { name: "z" }] }]
  }

  it("maps store paths to configuration paths", () => {
    const cases: Array<[string, string]> = [
      ["keys[0].secret", "users[0].keys[0].secret"],
      ["keys[2].secret", "users[1].keys[1].secret"],
      ["keys[1].quotaNanos", "users[1].keys[0].quota"],
      ["keys[1].limits.rpm", "users[1].keys[0].rpm"],
      ["keys[2]", "users[1].keys[1].name"],
      ["users[1].balanceNanos", "users[1].balance"],
      ["users[1]", "users[1].name"],
      ["groups[0].ratioMicros", "groups.vip.ratio"],
      ["models[0].cachedInputNanosPerMillion", "models.gpt-4o.cached_input"],
      ["aliases[0]", "aliases.gpt-*"],
      ["channels[3].baseUrl", "channels[3].base_url"],
      ["channels[0].timeouts.firstByteMs", "channels[0].timeouts.first_byte_ms"]
    ]
    for (const [store, config] of cases) assert.strictEqual(Provision.configPath(store, input, file), config, store)
  })

  const store = Store.layer({
    url: "sqlite::memory:",
    masterKey: { secret: Redacted.make("config-test-secret-0123456789") },
    nodeId: "t"
  })
  const apply = (config: ConfigFile.ConfigFile) =>
    Effect.flip(Provision.apply(config, { configSource: SOURCE } as never)).pipe(Effect.provide(Layer.fresh(store)))

  it.effect("a refusal by the store names the file and the field's path in it", () =>
    Effect.gen(function*() {
      const duplicate = yield* apply({ users: [{ name: "a" }, { name: "b", keys: [{ name: "k" }, { name: "k" }] }] })
      assert.strictEqual(duplicate._tag, "ConfigError")
      assert.strictEqual(
        duplicate.message,
        "Invalid configuration in gateway.yaml:\n  at users[1].keys[1].name: 'b/k' is declared twice"
      )
      const url = yield* apply({
        channels: [{ name: "c", type: "openai", base_url: "ftp://x/v1", api_key: "k", models: ["m"] }]
      })
      assert.strictEqual(
        url.message,
        "Invalid configuration in gateway.yaml:\n  at channels[0].base_url: expected an http(s) URL, got 'ftp://x/v1'"
      )
    }))

  it.effect("only an openai channel may relay Responses calls; a cache_write price is read like the others", () =>
    Effect.gen(function*() {
      const gemini = yield* Effect.flip(
        Provision.toInput({
          channels: [{
            name: "g",
            type: "gemini",
            base_url: "https://g.test",
            api_key: "k",
            models: ["m"],
            responses: true
          }]
        }, SOURCE)
      )
      assert.strictEqual(
        gemini.message,
        "Invalid configuration in gateway.yaml:\n  at channels[0].responses: only an openai channel can relay Responses API calls (this one is gemini)"
      )
      const input = yield* Provision.toInput({
        channels: [{
          name: "o",
          type: "openai",
          base_url: "https://o.test/v1",
          api_key: "k",
          models: ["claude"],
          responses: true
        }],
        models: { claude: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 } }
      }, SOURCE)
      assert.strictEqual(input.channels?.[0]?.responses, true)
      assert.strictEqual(input.models?.[0]?.cacheWriteNanosPerMillion, 3_750_000_000n)
      const bad = yield* Effect.flip(Provision.toInput({ models: { claude: { input: 3, cache_write: -1 } } }, SOURCE))
      assert.include(bad.message, "at models.claude.cache_write")
    }))

  it.effect("a model's media_part_tokens sets what a hold counts per media part, per kind; other kinds and bad values are refused by name", () =>
    Effect.gen(function*() {
      const input = yield* Provision.toInput({
        models: { gemini: { input: 1, output: 2, media_part_tokens: { video: 300_000, image: 1_120 } } }
      }, SOURCE)
      assert.deepStrictEqual(input.models?.[0]?.mediaPartTokens, { video: 300_000, image: 1_120 })
      const plain = yield* Provision.toInput({ models: { gemini: { input: 1 } } }, SOURCE)
      assert.isUndefined(plain.models?.[0]?.mediaPartTokens)
      const kind = yield* parseError("models:\n  g:\n    input: 1\n    media_part_tokens: {pdf: 5}\n")
      assert.include(kind.message, "at models.g.media_part_tokens.pdf: Unknown field")
      const negative = yield* parseError("models:\n  g:\n    input: 1\n    media_part_tokens: {video: -1}\n")
      assert.include(negative.message, "at models.g.media_part_tokens.video")
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Secrets from "../src/Secrets.ts"

const fromSecret = (secret: string) => Secrets.layer({ secret: Redacted.make(secret) })

describe("Secrets", () => {
  it.effect("encrypts and decrypts a round trip, with a fresh IV each time", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets.Secrets
      const a = yield* secrets.encrypt("sk-upstream-123")
      const b = yield* secrets.encrypt("sk-upstream-123")
      assert.match(a, /^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/)
      assert.notStrictEqual(a, b)
      assert.strictEqual(yield* secrets.decrypt(a), "sk-upstream-123")
      assert.strictEqual(yield* secrets.decrypt(yield* secrets.encrypt("")), "")
    }).pipe(Effect.provide(fromSecret("a server secret of enough length"))))

  it.effect("refuses a blob encrypted under another key, and a tampered blob", () =>
    Effect.gen(function*() {
      const blob = yield* Effect.flatMap(Secrets.Secrets, (s) => s.encrypt("hello")).pipe(
        Effect.provide(fromSecret("the first server secret value"))
      )
      const other = yield* Effect.flatMap(Secrets.Secrets, (s) => Effect.flip(s.decrypt(blob))).pipe(
        Effect.provide(fromSecret("a different server secret value"))
      )
      assert.strictEqual(other._tag, "SecretError")
      assert.include(other.message, "different server key")
      const tampered = yield* Effect.flatMap(Secrets.Secrets, (s) => Effect.flip(s.decrypt(blob.slice(0, -4) + "AAA=")))
        .pipe(
          Effect.provide(fromSecret("the first server secret value"))
        )
      assert.strictEqual(tampered._tag, "SecretError")
      const malformed = yield* Effect.flatMap(Secrets.Secrets, (s) => Effect.flip(s.decrypt("plain"))).pipe(
        Effect.provide(fromSecret("the first server secret value"))
      )
      assert.include(malformed.message, "format")
    }))

  it.effect("derives distinct keys for hashing and encryption; hashing is stable and keyed", () =>
    Effect.gen(function*() {
      const hash1 = yield* Effect.map(Secrets.KeyHasher, (h) => h.hash("sk-abc")).pipe(
        Effect.provide(fromSecret("secret number one!!"))
      )
      const hash1again = yield* Effect.map(Secrets.KeyHasher, (h) => h.hash("sk-abc")).pipe(
        Effect.provide(fromSecret("secret number one!!"))
      )
      const hash2 = yield* Effect.map(Secrets.KeyHasher, (h) => h.hash("sk-abc")).pipe(
        Effect.provide(fromSecret("secret number two!!"))
      )
      assert.match(hash1, /^[0-9a-f]{64}$/)
      assert.strictEqual(hash1, hash1again)
      assert.notStrictEqual(hash1, hash2)
    }))

  it.effect("rejects a short server secret", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(fromSecret("short")))
      assert.include(error.message, "MODELGATE_SECRET is too weak")
      assert.include(error.message, "at least 16 characters")
      assert.include(error.message, "it has 5")
    }))

  it.effect("rejects a long secret made of a repeated character or a repeated short word, naming the rule", () =>
    Effect.gen(function*() {
      for (const weak of ["aaaaaaaaaaaaaaaa", "abababababababababababab", "passwordpassword"]) {
        const error = yield* Effect.flip(Layer.build(fromSecret(weak)))
        assert.include(error.message, "MODELGATE_SECRET is too weak")
        assert.include(error.message, "at least 8 of them different")
        assert.notInclude(error.message, weak)
      }
      assert.isUndefined(Secrets.weakSecret("correct horse battery staple"))
      assert.isUndefined(Secrets.weakSecret("0fb3c1d29a7e4458"))
    }))

  it.effect("creates a 0600 key file once and reuses it", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-key-"))
      const path = join(dir, "sub", "master.key")
      const first = yield* Secrets.loadOrCreateKeyFile(path)
      const second = yield* Secrets.loadOrCreateKeyFile(path)
      assert.strictEqual(first.length, 32)
      assert.deepStrictEqual(first, second)
      assert.strictEqual(statSync(path).mode & 0o777, 0o600)
      assert.strictEqual(statSync(join(dir, "sub")).mode & 0o777, 0o700)
      const blob = yield* Effect.flatMap(Secrets.Secrets, (s) => s.encrypt("x")).pipe(
        Effect.provide(Secrets.layer({ keyFile: path }))
      )
      const plain = yield* Effect.flatMap(Secrets.Secrets, (s) => s.decrypt(blob)).pipe(
        Effect.provide(Secrets.layer({ keyFile: path }))
      )
      assert.strictEqual(plain, "x")
      rmSync(dir, { recursive: true, force: true })
    }))

  it("generates sk- keys of base62 with a 10-character prefix", () => {
    const seen = new Set<string>()
    for (let i = 0; i < 200; i++) {
      const key = Secrets.generateApiKey()
      assert.match(key.secret, /^sk-[0-9A-Za-z]{43}$/)
      assert.strictEqual(key.prefix, key.secret.slice(0, 10))
      seen.add(key.secret)
    }
    assert.strictEqual(seen.size, 200)
  })

  it.effect("hashes passwords with scrypt and verifies them", () =>
    Effect.gen(function*() {
      const hash = yield* Secrets.hashPassword(Redacted.make("correct horse"))
      assert.match(hash, /^scrypt\$N=32768,r=8,p=1\$/)
      assert.isTrue(yield* Secrets.verifyPassword(Redacted.make("correct horse"), hash))
      assert.isFalse(yield* Secrets.verifyPassword(Redacted.make("wrong horse"), hash))
      const error = yield* Effect.flip(Secrets.verifyPassword(Redacted.make("x"), "md5$abc"))
      assert.include(error.message, "format")
    }))

  it.effect("checks a missing hash against a decoy of the same cost, and never matches it", () =>
    Effect.gen(function*() {
      const checked: Array<string> = []
      const recording = (password: Redacted.Redacted<string>, encoded: string) => {
        checked.push(encoded)
        return Secrets.verifyPassword(password, encoded)
      }
      const real = yield* Secrets.hashPassword(Redacted.make("correct horse"))
      assert.isTrue(yield* Secrets.verifyPasswordOrDecoy(Redacted.make("correct horse"), real, recording))
      assert.isFalse(yield* Secrets.verifyPasswordOrDecoy(Redacted.make("correct horse"), undefined, recording))
      assert.isFalse(yield* Secrets.verifyPasswordOrDecoy(Redacted.make(""), null, recording))
      // Every call ran scrypt once: against the real hash, then twice against the decoy with the real parameters.
      assert.deepStrictEqual(checked, [real, Secrets.unmatchableHash, Secrets.unmatchableHash])
      assert.strictEqual(
        Secrets.unmatchableHash.split("$").slice(0, 2).join("$"),
        real.split("$").slice(0, 2).join("$")
      )
      assert.isFalse(yield* Secrets.verifyPassword(Redacted.make("anything"), Secrets.unmatchableHash))
    }))
})

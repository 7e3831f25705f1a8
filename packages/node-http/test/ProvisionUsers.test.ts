/**
 * The configuration file's users, keys and groups carry their rate limits into
 * the provisioning input (a user's limits apply to all the user's keys); and
 * nodes starting together create the first admin once, without failing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Store from "@modelgate/store/Store"
import * as Users from "@modelgate/store/Users"
import { Effect, Layer, Logger, Redacted } from "effect"
import { TestConsole } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Provision from "../src/Provision.ts"

describe("Provision.toInput", () => {
  it.effect("maps the limits of users, keys and groups; fields left out mean no limit", () =>
    Effect.gen(function*() {
      const input = yield* Provision.toInput({
        groups: { slow: { rpm: 30, concurrency: 2 } },
        users: [
          { name: "carol", rpm: 2, tpm: 1000, keys: [{ name: "k", group: "slow", tpm: 500 }] },
          { name: "dave", concurrency: 3 },
          { name: "erin" }
        ]
      }, "test")
      assert.deepStrictEqual(input.users?.map((user) => [user.name, user.limits]), [
        ["carol", { rpm: 2, tpm: 1000 }],
        ["dave", { concurrency: 3 }],
        ["erin", {}]
      ])
      assert.deepStrictEqual(input.keys?.[0]?.limits, { tpm: 500 })
      assert.deepStrictEqual(input.groups?.find((group) => group.name === "slow")?.limits, { rpm: 30, concurrency: 2 })
    }))
})

describe("Provision.ensureAdmin", () => {
  it.effect("nodes starting together create one first admin, and none of them fails", () =>
    Effect.gen(function*() {
      yield* Effect.all(Array.from({ length: 4 }, () => Provision.ensureAdmin), { concurrency: "unbounded" })
      const admins = (yield* (yield* Users.Users).list).filter((user) => user.role === "admin")
      assert.deepStrictEqual(admins.map((user) => user.name), ["admin"])
      const printed = (yield* TestConsole.logLines).filter((line) => String(line).includes("one was created"))
      assert.strictEqual(printed.length, 1, "the one-time password is printed once")
    }).pipe(
      Effect.provide(Layer.unwrap(Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-admin-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        ),
        (dir) =>
          Store.layer({
            url: `sqlite:${join(dir, "gateway.db")}`,
            masterKey: { secret: Redacted.make("ensure admin test secret 0123456789") },
            nodeId: "test"
          }).pipe(Layer.orDie)
      )))
    ))
})

describe("Provision.apply", () => {
  it.effect("a restart after a declared user was deleted: not created again, no second opening balance, and the start log says so", () => {
    const lines: Array<string> = []
    const file = {
      users: [{ name: "zoe", balance: 10, keys: [{ name: "laptop", secret: "sk-zoe-laptop-0123456789abcdef" }] }]
    }
    return Effect.gen(function*() {
      const settings = { configSource: "gateway.yaml" } as Parameters<typeof Provision.apply>[1]
      yield* Provision.apply(file, settings)
      const users = yield* Users.Users
      const zoe = (yield* users.findByName("zoe"))!
      yield* users.remove(zoe.id)
      // The next start applies the same file.
      lines.length = 0
      yield* Provision.apply(file, settings)
      assert.isUndefined(yield* users.findByName("zoe"))
      assert.isTrue(
        lines.some((line) => line.includes("the configuration file declares users:zoe, which was deleted")),
        lines.join("\n")
      )
      assert.isTrue(
        lines.some((line) => line.includes("declares keys:zoe/laptop, which was deleted")),
        lines.join("\n")
      )
    }).pipe(
      Effect.provide(Logger.layer([Logger.make(({ message }) => {
        lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
      })])),
      Effect.provide(Layer.unwrap(Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-deleted-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        ),
        (dir) =>
          Store.layer({
            url: `sqlite:${join(dir, "gateway.db")}`,
            masterKey: { secret: Redacted.make("deleted user test secret 0123456789") },
            nodeId: "test"
          }).pipe(Layer.orDie)
      )))
    )
  })
})

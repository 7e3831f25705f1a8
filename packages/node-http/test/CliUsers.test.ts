/**
 * `modelgate users set-password NAME`: the new password comes from standard
 * input (its first line when piped), is refused under 8 characters, replaces
 * the old one and ends the user's console sessions.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Sessions from "@modelgate/store/Sessions"
import * as Store from "@modelgate/store/Store"
import * as Users from "@modelgate/store/Users"
import { Effect, Redacted } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const SECRET = "cli-users-test-secret-0123456789abcdef"

/** Runs the CLI with `input` on standard input (a pipe, not a terminal). */
const cli = (args: ReadonlyArray<string>, input: string) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, MODELGATE_SECRET: SECRET } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => stdout += d)
    child.stderr.on("data", (d) => stderr += d)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input)
  })

describe("modelgate users set-password", () => {
  it.live(
    "sets the password from standard input, ends the user's sessions, and refuses a short one",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "modelgate-cli-users-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const database = `sqlite:${join(dir, "gateway.db")}`
        const config = join(dir, "modelgate.yaml")
        writeFileSync(config, JSON.stringify({ database, log_level: "error" }))
        const store = Store.layer({ url: database, masterKey: { secret: Redacted.make(SECRET) }, nodeId: "cli-test" })
        const session = yield* Effect.gen(function*() {
          const alice = yield* (yield* Users.Users).create({
            name: "alice",
            password: Redacted.make("the old password")
          })
          return yield* (yield* Sessions.Sessions).create(alice.id)
        }).pipe(Effect.provide(store), Effect.scoped)

        const short = yield* Effect.promise(() =>
          cli(["users", "set-password", "alice", "--config", config], "short\n")
        )
        assert.strictEqual(short.code, 1)
        assert.include(short.stderr, "at least 8 characters")

        const unknown = yield* Effect.promise(() =>
          cli(["users", "set-password", "nobody", "--config", config], "long enough password\n")
        )
        assert.strictEqual(unknown.code, 1)
        assert.include(unknown.stderr, "No user named 'nobody'")

        const set = yield* Effect.promise(() =>
          cli(["users", "set-password", "alice", "--config", config], "a brand new password\nnot this line\n")
        )
        assert.strictEqual(set.code, 0, set.stderr)
        assert.include(set.stdout, "alice: the password is changed")
        assert.notInclude(set.stdout + set.stderr, "a brand new password", "the password is never printed")

        yield* Effect.gen(function*() {
          const users = yield* Users.Users
          assert.isDefined(yield* users.verifyLogin("alice", Redacted.make("a brand new password")))
          assert.isUndefined(yield* users.verifyLogin("alice", Redacted.make("the old password")))
          assert.isUndefined(yield* users.verifyLogin("alice", Redacted.make("short")), "the refused one was never set")
          assert.isUndefined(yield* (yield* Sessions.Sessions).find(session.token), "the old session ended")
        }).pipe(Effect.provide(store), Effect.scoped)
      }),
    60_000
  )
})

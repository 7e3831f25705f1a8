/**
 * The default node id is stable across restarts, and never shared by two
 * processes that run at once on one state directory.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeIdentity from "../src/NodeIdentity.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-node-id-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** Claims an id in its own scope, closed by `release`. */
const claimed = Effect.fnUntraced(function*(dir: string) {
  const scope = yield* Scope.make()
  const id = yield* NodeIdentity.claim(dir).pipe(Scope.provide(scope))
  return { id, release: Scope.close(scope, Exit.void) }
})

describe("NodeIdentity", () => {
  it.effect("keeps one id across restarts, made of the host name and a random suffix, in a 0600 file", () =>
    Effect.gen(function*() {
      const dir = join(yield* tempDir, "data")
      const first = yield* claimed(dir)
      assert.match(first.id, /^[A-Za-z0-9._-]+-[0-9a-f]{6}$/)
      assert.isTrue(first.id.startsWith(hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 48)))
      assert.strictEqual(readFileSync(join(dir, "node-id"), "utf8").trim(), first.id)
      assert.strictEqual(statSync(join(dir, "node-id")).mode & 0o777, 0o600)
      yield* first.release
      const restarted = yield* claimed(dir)
      assert.strictEqual(restarted.id, first.id)
      yield* restarted.release
    }))

  it.effect("gives a second process on the same directory its own id, stable too, and the first id back once free", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const a = yield* claimed(dir)
      const b = yield* claimed(dir)
      assert.strictEqual(b.id, `${a.id}-2`)
      yield* b.release
      const bAgain = yield* claimed(dir)
      assert.strictEqual(bAgain.id, `${a.id}-2`, "a's slot is still held")
      yield* a.release
      const aAgain = yield* claimed(dir)
      assert.strictEqual(aAgain.id, a.id)
      yield* bAgain.release
      yield* aAgain.release
    }))

  it.effect("takes over the lock of a process that died", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const first = yield* claimed(dir)
      yield* first.release
      // A crash leaves the lock behind, naming a process that no longer exists.
      const dead = spawnSync(process.execPath, ["-e", ""]).pid
      writeFileSync(join(dir, "node-id.lock"), `${dead}\n`)
      const after = yield* claimed(dir)
      assert.strictEqual(after.id, first.id)
      yield* after.release
    }))

  it.effect("falls back to hostname-pid, with a warning, when the directory cannot be used", () =>
    Effect.gen(function*() {
      // A state directory under a regular file can never be created, whoever runs the test.
      const file = join(yield* tempDir, "a-file")
      writeFileSync(file, "")
      const fallback = yield* claimed(join(file, "data"))
      assert.strictEqual(fallback.id, `${hostname()}-${process.pid}`)
      yield* fallback.release
    }))
})

/**
 * The console's files: served from memory under /console/ with a
 * Content-Security-Policy that forbids framing and inline scripts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ConsoleFiles from "../src/ConsoleFiles.ts"

const built = () => {
  const dir = mkdtempSync(join(tmpdir(), "modelgate-console-files-"))
  mkdirSync(join(dir, "assets"))
  writeFileSync(join(dir, "index.html"), "<!doctype html><div id=root></div>")
  writeFileSync(join(dir, "assets", "index-abc.js"), "console.log(1)")
  return dir
}

const answer = (serve: ReturnType<typeof ConsoleFiles.make>, path: string) =>
  Effect.map(serve(path), (response) => HttpServerResponse.toWeb(response))

describe("ConsoleFiles", () => {
  it.effect("sends a Content-Security-Policy that forbids framing and inline scripts with every file", () =>
    Effect.gen(function*() {
      const dir = built()
      try {
        const serve = ConsoleFiles.make(dir)
        for (const path of ["/console/", "/console/keys", "/console/assets/index-abc.js"]) {
          const response = yield* answer(serve, path)
          assert.strictEqual(response.status, 200, path)
          const policy = response.headers.get("content-security-policy") ?? ""
          assert.include(policy, "frame-ancestors 'none'", path)
          assert.include(policy, "script-src 'self'", path)
          assert.notInclude(policy.split("; ").find((d) => d.startsWith("script-src")) ?? "", "unsafe-inline")
        }
        const page = yield* answer(serve, "/console/")
        assert.strictEqual(page.headers.get("x-frame-options"), "DENY")
        assert.strictEqual(page.headers.get("cache-control"), "no-cache")
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))
})

/**
 * The production artifact: `bundle.ts` builds `modelgate.mjs` (into a scratch
 * directory here), and that one file serves, with nothing beside it: the
 * management API (the price table included: it was read from a path beside
 * the module, which the bundle did not have, and the start failed) and
 * `/metrics` (prom-client bundled).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, startGatewayProcess, writeConfig } from "./support/Processes.ts"

const dir = mkdtempSync(join(tmpdir(), "modelgate-bundle-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the bundle", () => {
  it("starts alone and serves the price table and /metrics", { timeout: 180_000 }, async () => {
    const out = join(dir, "modelgate.mjs")
    execFileSync(process.execPath, [join(import.meta.dirname, "..", "bundle.ts"), out], { stdio: "ignore" })
    const port = await freePort()
    const config = writeConfig(dir, "gateway", {
      listen: `127.0.0.1:${port}`,
      database: `sqlite:${join(dir, "gateway.db")}`,
      log_level: "error",
      metrics: { token: "bundle-metrics-token-0123456789" },
      users: [{ name: "admin", role: "admin", password: "admin-password-1" }]
    })
    const gateway = await startGatewayProcess(config, port, out)
    try {
      const login = await fetch(`${gateway.url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "admin", password: "admin-password-1" })
      })
      assert.strictEqual(login.status, 200)
      const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!
      const presets = await fetch(`${gateway.url}/api/admin/models/presets`, { headers: { cookie } })
      assert.strictEqual(presets.status, 200)
      assert.isAbove((await presets.json() as { data: Array<unknown> }).data.length, 10)
      const metrics = await fetch(`${gateway.url}/metrics`, { headers: { authorization: "Bearer bundle-metrics-token-0123456789" } })
      assert.strictEqual(metrics.status, 200)
      assert.include(await metrics.text(), "# TYPE modelgate_requests_total counter")
    } finally {
      await gateway.stop()
    }
  })
})

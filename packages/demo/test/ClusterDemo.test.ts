/**
 * The cluster demo: its nginx configuration, its clear errors when nginx,
 * PostgreSQL or Redis is missing, and (when PostgreSQL, Redis and nginx are
 * all here) a whole run: two nodes, nginx, the smoke test, and nothing left
 * behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import * as ClusterDemo from "../src/ClusterDemo.ts"
import { freePort } from "../src/Gateway.ts"

describe("ClusterDemo", () => {
  it("nginx runs in the foreground with every path in the demo's directory, round robin over the nodes", () => {
    const config = ClusterDemo.nginxConfig("/tmp/demo-x", 8090, [4001, 4002])
    assert.include(config, "daemon off;")
    assert.include(config, "pid /tmp/demo-x/nginx.pid;")
    assert.include(config, "error_log /tmp/demo-x/nginx-error.log warn;")
    for (
      const path of [
        "client_body_temp_path",
        "proxy_temp_path",
        "fastcgi_temp_path",
        "uwsgi_temp_path",
        "scgi_temp_path"
      ]
    ) {
      assert.match(config, new RegExp(`${path} /tmp/demo-x/`))
    }
    assert.include(config, "server 127.0.0.1:4001")
    assert.include(config, "server 127.0.0.1:4002")
    assert.include(config, "listen 127.0.0.1:8090;")
    assert.include(config, "proxy_buffering off;")
    assert.include(config, "add_header X-Served-By $upstream_addr always;")
  })

  it("each node shares the database, Redis and its key prefix, and has its own address and id", () => {
    const shared = { database: "postgres://db/x", redis: "redis://r:6379", redisKeyPrefix: "p:", upstream: "http://up" }
    const one = ClusterDemo.nodeConfig(shared, { port: 1, id: "a" })
    const two = ClusterDemo.nodeConfig(shared, { port: 2, id: "b" })
    assert.deepStrictEqual([one.database, one.redis, one.redis_key_prefix], [
      two.database,
      two.redis,
      two.redis_key_prefix
    ])
    assert.deepStrictEqual([one.listen, one.node_id, two.listen, two.node_id], ["127.0.0.1:1", "a", "127.0.0.1:2", "b"])
  })

  it.effect("says how to fix a missing nginx, PostgreSQL or Redis", () =>
    Effect.gen(function*() {
      const nginx = yield* Effect.flip(ClusterDemo.checkNginx("/nonexistent/nginx"))
      assert.include(nginx.message, "nginx was not found at /nonexistent/nginx")
      assert.include(nginx.message, "MODELGATE_NGINX")
      const port = yield* Effect.promise(freePort)
      const redis = yield* Effect.flip(ClusterDemo.checkRedis(`redis://127.0.0.1:${port}`))
      assert.include(redis.message, `Redis is not reachable at redis://127.0.0.1:${port}`)
      assert.include(redis.message, "MODELGATE_DEMO_REDIS")
      const postgres = yield* Effect.flip(ClusterDemo.checkPostgres(`postgres://demo:secret@127.0.0.1:${port}/x`))
      assert.include(postgres.message, `PostgreSQL is not reachable at postgres://demo:***@127.0.0.1:${port}/x`)
      assert.include(postgres.message, "MODELGATE_DEMO_POSTGRES")
    }), 30_000)
})

const postgres = process.env["MODELGATE_TEST_POSTGRES"]
const redis = process.env["MODELGATE_TEST_REDIS"]
const ready = postgres !== undefined && redis !== undefined && existsSync(ClusterDemo.defaults.nginx)

describe.skipIf(!ready)(
  "the cluster demo end to end (needs MODELGATE_TEST_POSTGRES, MODELGATE_TEST_REDIS and nginx)",
  () => {
    it.live("runs the smoke test through nginx and leaves nothing behind", () =>
      Effect.gen(function*() {
        const before = new Set(readdirSync(tmpdir()).filter((name) => name.startsWith("modelgate-cluster-demo-")))
        const checks = yield* ClusterDemo.run({
          postgres: postgres!,
          redis: redis!,
          nginx: ClusterDemo.defaults.nginx,
          keep: false
        })
        assert.deepStrictEqual(checks.map((check) => [check.name, check.ok]), [
          ["chat completion served by node 1", true],
          ["chat completion served by node 2", true],
          [`shared rate limit (key 'limited', ${ClusterDemo.LIMITED_RPM} requests per minute)`, true],
          ["revocation seen by every node", true]
        ])
        const after = readdirSync(tmpdir()).filter((name) =>
          name.startsWith("modelgate-cluster-demo-") && !before.has(name)
        )
        assert.deepStrictEqual(after, [], "the demo's directory is removed")
      }), 120_000)
  }
)

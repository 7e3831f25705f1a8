#!/usr/bin/env node
/**
 * `pnpm cluster-demo [--keep]`: the executable of `ClusterDemo`. The only
 * place of the demo that reads `process.env` and `process.argv`:
 *
 * - `MODELGATE_DEMO_POSTGRES`: a PostgreSQL URL whose user may create
 *   databases (default `postgres://postgres@127.0.0.1:5432/postgres`);
 * - `MODELGATE_DEMO_REDIS`: the Redis URL (default `redis://127.0.0.1:6379`);
 * - `MODELGATE_NGINX`: the nginx executable (default `/usr/sbin/nginx`);
 * - `--keep`: leave the cluster running after the smoke test, until Ctrl-C.
 *
 * Exit code 0 when every check passed, 1 otherwise (with the reason).
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Exit } from "effect"
import * as ClusterDemo from "./ClusterDemo.ts"

const env = process.env
const unknown = process.argv.slice(2).filter((arg) => arg !== "--keep")

const program = unknown.length > 0
  ? Console.error(
    `cluster-demo: unknown argument ${unknown.map((a) => `'${a}'`).join(", ")}; the only option is --keep.`
  ).pipe(
    Effect.andThen(Effect.sync(() => process.exitCode = 1))
  )
  : ClusterDemo.main({
    postgres: env["MODELGATE_DEMO_POSTGRES"] || ClusterDemo.defaults.postgres,
    redis: env["MODELGATE_DEMO_REDIS"] || ClusterDemo.defaults.redis,
    nginx: env["MODELGATE_NGINX"] || ClusterDemo.defaults.nginx,
    keep: process.argv.includes("--keep")
  }).pipe(
    Effect.asVoid,
    Effect.catchTag(
      "DemoError",
      (error) =>
        Console.error(`\ncluster-demo: ${error.message}`).pipe(Effect.andThen(Effect.sync(() => process.exitCode = 1)))
    )
  )

NodeRuntime.runMain(program, {
  teardown: (exit, onExit) =>
    onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? (process.exitCode === 1 ? 1 : 0) : 1)
})

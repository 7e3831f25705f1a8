#!/usr/bin/env node
/**
 * The `modelgate` executable. The only place that reads `process.env` and
 * `process.argv`. Errors meant for the operator (a bad configuration, a
 * database that cannot be opened, a bad flag) are printed as their message
 * alone, with exit code 1; anything else is printed in full.
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit } from "effect"
import { Command } from "effect/cli"
import * as Cli from "./Cli.ts"

const operatorErrors = new Set([
  "ConfigError",
  "SecretError",
  "InvalidDatabaseUrl",
  "InvalidInput",
  "ResourceNotFound",
  "Conflict",
  "SqlError",
  "ServeError",
  "JournalError"
])

Cli.make(process.env).pipe(
  Command.run({ version: "0.1.0" }),
  Effect.provide(NodeServices.layer),
  Effect.catchCause((cause) => {
    const failure = cause.reasons.find((reason) => reason._tag === "Fail")
    const error = failure?._tag === "Fail"
      ? failure.error as { readonly _tag?: string; readonly message?: string }
      : undefined
    if (
      error !== undefined && (operatorErrors.has(error._tag ?? "") || error instanceof Error) &&
      typeof error.message === "string" && error.message.length > 0
    ) {
      return Console.error(`modelgate: ${error.message}`).pipe(Effect.andThen(Effect.sync(() => process.exitCode = 1)))
    }
    return Effect.failCause(cause)
  }),
  // SIGTERM and SIGINT interrupt the program, which drains in-flight calls: that is a clean stop (exit 0).
  NodeRuntime.runMain({
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)

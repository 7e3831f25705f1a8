/**
 * The access log: one structured line per request (`access_log`, at level
 * `info`), written when its answer starts, with its status (499, as nginx
 * writes it, when the client left first) and how long it took. Both servers
 * of the process write it with `logged`: the API surface (`Listener`) and the
 * host's own routes (`Gateway`).
 *
 * @since 0.1.0
 */
import { Clock, Effect, Exit } from "effect"
import type { Settings } from "./Settings.ts"

/** Whether lines are written at all: on, and not filtered out by the log level (then nothing costs a clock read). */
export const enabled = (settings: Settings): boolean =>
  settings.accessLog && (settings.logLevel === "info" || settings.logLevel === "debug")

/** What a request's line names. @category models */
export interface Line {
  readonly requestId: string
  readonly method: string
  readonly path: string
}

/**
 * Runs `program` (a request's answer) and writes its line; `status` reads
 * the status of the answer it gave.
 *
 * @category logging
 */
export const logged = <A, E, R>(
  program: Effect.Effect<A, E, R>,
  line: Line,
  status: (answer: A) => number
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.currentTimeMillis, (started) =>
    program.pipe(
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.logInfo("request").pipe(
            Effect.annotateLogs({
              request_id: line.requestId,
              method: line.method,
              path: line.path,
              status: Exit.isSuccess(exit) ? status(exit.value) : 499,
              duration_ms: now - started
            })
          ))
      )
    ))

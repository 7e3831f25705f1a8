/**
 * The engine's `Transport` on Node: upstream requests go straight to Undici,
 * through one connection pool per distinct `connectMs` (so each channel's
 * connect timeout is enforced where connections are opened), and the
 * deadlines are kept by the connection itself, not by racing fibers: Undici's
 * header timer (the first-byte deadline), its body timer (the idle gap between
 * chunks) and one timer for the total, which aborts the request or its body
 * and is cleared when the body closes. A race per call and a timer fiber per
 * chunk cost more CPU than the rest of relaying a call.
 *
 * Undici's failures become the engine's `TransportError` kinds
 * (`transportFailure`); interrupting the fiber that waits on a request or a
 * body aborts it.
 *
 * @since 0.1.0
 */
import { Agent, type Dispatcher } from "@effect/platform-node/Undici"
import type { Domain } from "@modelgate/core"
import { Transport } from "@modelgate/engine/wire/Transport"
import type { BodyFlow, BodySink, Deadlines, ResponseBody, TransportResponse } from "@modelgate/engine/wire/Transport"
import { TransportError } from "@modelgate/engine/wire/Transport"
import { Effect, Layer } from "effect"

/**
 * A delay for a timer: at least 1 ms, and at most the longest a Node timer
 * can wait (about 24.8 days), since a longer one fires at once instead.
 *
 * @category timers
 */
export const timerMs = (ms: number): number => Math.min(2_147_483_647, Math.max(1, ms))

/** The abort reason of a call whose total deadline passed. @category timers */
export class TotalDeadlinePassed extends Error {
  readonly code = "MODELGATE_TOTAL_DEADLINE"
  constructor() {
    super("the call's total deadline passed")
  }
}

/** The code of the failure behind a transport error (Undici's, or `TotalDeadlinePassed`'s). */
const codeOf = (error: unknown): string | undefined => {
  let cause: unknown = error
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const code = (cause as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return undefined
}

/**
 * The engine's failure kind for an Undici failure of a request (`phase`
 * "send": before the headers) or of its body.
 *
 * @category errors
 */
export const transportFailure = (error: unknown, at: Deadlines, phase: "send" | "body"): TransportError => {
  const code = codeOf(error)
  switch (code) {
    case "MODELGATE_TOTAL_DEADLINE":
      return new TransportError({ kind: "total-timeout" })
    case "UND_ERR_HEADERS_TIMEOUT":
      return new TransportError({ kind: at.total <= at.firstByte ? "total-timeout" : "first-byte-timeout" })
    case "UND_ERR_BODY_TIMEOUT":
      return new TransportError({ kind: "idle-timeout" })
    case "UND_ERR_CONNECT_TIMEOUT":
      return new TransportError({ kind: "connect-timeout" })
    default:
      return phase === "send"
        ? new TransportError({ kind: "unreachable", detail: code ?? "transport error" })
        : new TransportError({ kind: "broken", detail: code })
  }
}

const ignore = () => {}

type UndiciBody = Dispatcher.ResponseData["body"]

/**
 * Ends a body that will not be read further. Undici fails an unfinished body
 * it is asked to destroy with an `error` event (`RequestAbortedError`), which
 * would be an uncaught exception (and end the process) if nothing listened.
 */
const discard = (body: UndiciBody): void => {
  body.on("error", ignore)
  body.destroy()
}

/** UTF-8 bytes as text, as `TextDecoder` reads them (malformed sequences replaced, a leading byte-order mark dropped). */
const utf8 = (bytes: Buffer): string => {
  const text = bytes.toString("utf8")
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/** The earlier of the two deadlines, and its kind. */
const firstDeadline = (at: Deadlines) =>
  at.total < at.firstByte
    ? { at: at.total, kind: "total-timeout" as const }
    : { at: at.firstByte, kind: "first-byte-timeout" as const }

/** An Undici response body as the engine's `ResponseBody`. */
/**
 * An Undici response body (any Node readable) as the engine's `ResponseBody`,
 * reading within the deadlines `at`.
 *
 * @category bodies
 */
export const bodyOf = (body: UndiciBody, at: Deadlines): ResponseBody => {
  const readAll = <A>(read: () => Promise<A>) =>
    Effect.tryPromise({
      try: (signal) => {
        const stop = () => discard(body)
        signal.addEventListener("abort", stop, { once: true })
        return read().finally(() => signal.removeEventListener("abort", stop))
      },
      catch: (error) => error instanceof TransportError ? error : transportFailure(error, at, "body")
    })

  // A callback rather than a promise: no AbortController and abort listener per read (interruption is the
  // returned finaliser), and the chunks are decoded once, at the end.
  const text = (maxBytes: number) =>
    Effect.callback<string, TransportError>((resume) => {
      const chunks: Array<Buffer> = []
      let bytes = 0
      const onData = (chunk: Buffer) => {
        bytes += chunk.byteLength
        if (bytes > maxBytes) {
          cleanup()
          discard(body)
          resume(Effect.fail(new TransportError({ kind: "too-large", detail: `over ${maxBytes} bytes` })))
          return
        }
        chunks.push(chunk)
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(utf8(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes))))
      }
      const onError = (error: unknown) => {
        cleanup()
        resume(Effect.fail(error instanceof TransportError ? error : transportFailure(error, at, "body")))
      }
      const cleanup = () => {
        body.off("data", onData)
        body.off("end", onEnd)
        body.off("error", onError)
      }
      body.on("data", onData)
      body.once("end", onEnd)
      body.once("error", onError)
      return Effect.sync(() => {
        cleanup()
        discard(body)
      })
    })

  const prefix = (maxBytes: number) =>
    readAll(async () => {
      const decoder = new TextDecoder()
      let out = ""
      let bytes = 0
      try {
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          const take = Math.min(chunk.byteLength, maxBytes - bytes)
          out += decoder.decode(take === chunk.byteLength ? chunk : chunk.subarray(0, take), { stream: true })
          bytes += take
          if (bytes >= maxBytes) break
        }
      } catch {
        // A broken or stalled body: what was read is the message.
      } finally {
        discard(body)
      }
      return out + decoder.decode()
    }).pipe(Effect.orElseSucceed(() => ""))

  const next = Effect.callback<Uint8Array | undefined, TransportError>((resume) => {
    if (body.readableEnded) return resume(Effect.undefined)
    const deadline = firstDeadline(at)
    const cleanup = () => {
      clearTimeout(timer)
      body.off("readable", onReadable)
      body.off("end", onEnd)
      body.off("error", onError)
    }
    const onReadable = () => {
      const chunk = body.read() as Uint8Array | null
      if (chunk === null) return
      cleanup()
      resume(Effect.succeed(chunk))
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.undefined)
    }
    const onError = (error: unknown) => {
      cleanup()
      resume(Effect.fail(transportFailure(error, at, "body")))
    }
    const timer = setTimeout(() => {
      cleanup()
      discard(body)
      resume(Effect.fail(new TransportError({ kind: deadline.kind })))
    }, timerMs(deadline.at - Date.now()))
    body.on("readable", onReadable)
    body.once("end", onEnd)
    body.once("error", onError)
    onReadable()
    return Effect.sync(() => {
      cleanup()
      discard(body)
    })
  }).pipe(Effect.onError(() => Effect.sync(() => discard(body))))

  const flow = (sink: BodySink): BodyFlow => {
    let done = false
    const onData = (chunk: Uint8Array) => sink.chunk(chunk)
    const onEnd = () => {
      detach()
      sink.end()
    }
    const onError = (error: unknown) => {
      detach()
      sink.error(transportFailure(error, at, "body"))
    }
    const detach = () => {
      done = true
      body.off("data", onData)
      body.off("end", onEnd)
      body.off("error", onError)
      // A late error from the body (it may be destroyed) must not go unhandled.
      body.on("error", ignore)
    }
    body.on("data", onData)
    body.once("end", onEnd)
    body.once("error", onError)
    body.pause()
    return {
      resume: () => {
        if (!done) body.resume()
      },
      pause: () => {
        if (!done) body.pause()
      },
      cancel: () => {
        if (!done) detach()
        discard(body)
      }
    }
  }

  return { text, prefix, next, flow, discard: () => discard(body) }
}

/** Undici's answer as the engine's `TransportResponse` (its headers made into a record when first read). */
const responseOf = (data: Dispatcher.ResponseData, at: Deadlines): TransportResponse => {
  let headers: Record<string, string> | undefined
  return {
    status: data.statusCode,
    get headers() {
      return headers ??= headersOf(data.headers)
    },
    body: bodyOf(data.body, at)
  }
}

/** The response headers as a record (a header sent several times has its values joined by ", "), made when read. */
const headersOf = (headers: Dispatcher.ResponseData["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/**
 * The transport: Undici agents created on first use (one per `connectMs`)
 * and closed with the layer.
 *
 * @category layers
 */
export const layer: Layer.Layer<Transport> = Layer.effect(
  Transport,
  Effect.gen(function*() {
    const agents = new Map<number, Agent>()
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => Promise.all([...agents.values()].map((agent) => agent.destroy())))
    )
    const agentFor = (channel: Domain.Channel): Agent => {
      const connectMs = channel.timeouts.connectMs
      let agent = agents.get(connectMs)
      if (agent === undefined) {
        agent = new Agent({ connect: { timeout: timerMs(connectMs) }, keepAliveTimeout: 60_000 })
        agents.set(connectMs, agent)
      }
      return agent
    }
    return Transport.of({
      // A callback rather than a promise: one AbortController per call (Undici's signal, aborted by the total
      // deadline or an interruption), where `Effect.tryPromise` would add its own and a listener forwarding it.
      send: (request) =>
        Effect.callback<TransportResponse, TransportError>((resume) => {
          const at = request.deadlines
          const controller = new AbortController()
          let interrupted = false
          try {
            const target = new URL(request.url)
            const now = Date.now()
            const timer = setTimeout(() => controller.abort(new TotalDeadlinePassed()), timerMs(at.total - now))
            const done = () => clearTimeout(timer)
            agentFor(request.channel).request({
              origin: target.origin,
              path: target.pathname + target.search,
              method: request.method,
              headers: request.headers,
              body: request.body ?? null,
              signal: controller.signal,
              headersTimeout: timerMs(Math.min(at.firstByte, at.total) - now),
              bodyTimeout: timerMs(request.channel.timeouts.idleMs)
            }).then(
              (data) => {
                data.body.once("close", done)
                if (interrupted) return discard(data.body)
                resume(Effect.succeed(responseOf(data, at)))
              },
              (error: unknown) => {
                done()
                resume(Effect.fail(transportFailure(error, at, "send")))
              }
            )
          } catch (error) {
            resume(Effect.fail(transportFailure(error, at, "send")))
          }
          return Effect.sync(() => {
            interrupted = true
            controller.abort()
          })
        })
    })
  })
)

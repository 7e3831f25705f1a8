/**
 * The engine's `Transport` over the runtime's own `fetch` (Bun, Deno,
 * workers, browsers, Node): what an embedded gateway uses unless its host
 * gives it another. The deadlines are kept with timers around the fetch and
 * the body's reader: the first-byte deadline until the headers (and, for a
 * stream, the chunks of its opening), the idle deadline between two chunks, and the
 * total deadline over all of it. `fetch` has no separate connection timeout:
 * opening the connection counts against the first-byte deadline.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import {
  type BodyFlow,
  type BodySink,
  type Deadlines,
  type FailureKind,
  type ResponseBody,
  Transport,
  TransportError,
  type TransportRequest,
  type TransportResponse
} from "./Transport.ts"

/** The longest a timer can wait in every runtime (about 24.8 days); a longer one fires at once in some. */
const timerMs = (ms: number): number => Math.min(2_147_483_647, Math.max(1, ms))

/** Why a request was aborted by one of our own timers. */
class Expired extends Error {
  readonly kind: FailureKind
  constructor(kind: FailureKind) {
    super(`the ${kind} passed`)
    this.kind = kind
  }
}

/** The code or words of a failed fetch, for messages (`ECONNREFUSED`, `ConnectionRefused`, ...). */
const detailOf = (error: unknown): string => {
  let cause: unknown = error
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const code = (cause as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return error instanceof Error ? error.message : String(error)
}

const failureOf = (error: unknown, phase: "send" | "body"): TransportError => {
  if (error instanceof TransportError) return error
  if (error instanceof Expired) return new TransportError({ kind: error.kind })
  return phase === "send"
    ? new TransportError({ kind: "unreachable", detail: detailOf(error) })
    : new TransportError({ kind: "broken", detail: detailOf(error) })
}

/**
 * One request's timers and its abort: `expire(kind)` aborts the fetch and its
 * body with that kind; `idle` restarts the idle timer (each chunk).
 */
class Timers {
  readonly controller = new AbortController()
  private total: ReturnType<typeof setTimeout> | undefined
  private waiting: ReturnType<typeof setTimeout> | undefined
  private readonly idleMs: number

  constructor(at: Deadlines, idleMs: number) {
    this.idleMs = idleMs
    this.total = setTimeout(() => this.expire("total-timeout"), timerMs(at.total - Date.now()))
  }

  /** Waits for the first byte until `at`. */
  firstByte(at: Deadlines): void {
    const kind: FailureKind = at.total <= at.firstByte ? "total-timeout" : "first-byte-timeout"
    this.arm(timerMs(Math.min(at.firstByte, at.total) - Date.now()), kind)
  }

  /** Waits at most the idle time for the next chunk. */
  idle(): void {
    this.arm(timerMs(this.idleMs), "idle-timeout")
  }

  /** A read finished: nothing is awaited until the next one (a paused stream is not idle). */
  rest(): void {
    if (this.waiting !== undefined) clearTimeout(this.waiting)
    this.waiting = undefined
  }

  expire(kind: FailureKind): void {
    this.clear()
    this.controller.abort(new Expired(kind))
  }

  clear(): void {
    if (this.total !== undefined) clearTimeout(this.total)
    if (this.waiting !== undefined) clearTimeout(this.waiting)
    this.total = undefined
    this.waiting = undefined
  }

  private arm(ms: number, kind: FailureKind): void {
    if (this.waiting !== undefined) clearTimeout(this.waiting)
    this.waiting = setTimeout(() => this.expire(kind), ms)
  }
}

/** A `ReadableStream` body as the engine's `ResponseBody`. */
const bodyOf = (response: Response, timers: Timers, at: Deadlines): ResponseBody => {
  const stream = response.body
  const reader = stream?.getReader()
  let released = false
  const release = () => {
    if (released) return
    released = true
    timers.clear()
    reader?.cancel().catch(() => {})
  }
  /** Reads one chunk within the idle deadline; undefined at the end. */
  const next = async (): Promise<Uint8Array | undefined> => {
    if (reader === undefined) return undefined
    timers.idle()
    const read = await reader.read()
    timers.rest()
    if (read.done) {
      release()
      return undefined
    }
    return read.value
  }
  const reason = () => timers.controller.signal.reason
  const readAll = <A>(read: () => Promise<A>) =>
    Effect.tryPromise({
      try: (signal) => {
        signal.addEventListener("abort", release, { once: true })
        return read().finally(() => signal.removeEventListener("abort", release))
      },
      catch: (error) => {
        release()
        return failureOf(reason() ?? error, "body")
      }
    })

  const text = (maxBytes: number) =>
    readAll(async () => {
      const decoder = new TextDecoder()
      let out = ""
      let bytes = 0
      for (let chunk = await next(); chunk !== undefined; chunk = await next()) {
        bytes += chunk.byteLength
        if (bytes > maxBytes) {
          release()
          throw new TransportError({ kind: "too-large", detail: `over ${maxBytes} bytes` })
        }
        out += decoder.decode(chunk, { stream: true })
      }
      return out + decoder.decode()
    })

  const prefix = (maxBytes: number) =>
    readAll(async () => {
      const decoder = new TextDecoder()
      let out = ""
      let bytes = 0
      try {
        for (let chunk = await next(); chunk !== undefined; chunk = await next()) {
          const take = Math.min(chunk.byteLength, maxBytes - bytes)
          out += decoder.decode(take === chunk.byteLength ? chunk : chunk.subarray(0, take), { stream: true })
          bytes += take
          if (bytes >= maxBytes) break
        }
      } catch {
        // A broken or stalled body: what was read is the message.
      } finally {
        release()
      }
      return out + decoder.decode()
    }).pipe(Effect.orElseSucceed(() => ""))

  let ended = false
  const opening = readAll(async (): Promise<Uint8Array | undefined> => {
    if (reader === undefined || ended) return undefined
    timers.firstByte(at)
    const read = await reader.read()
    timers.rest()
    if (read.done) {
      ended = true
      release()
      return undefined
    }
    return read.value
  })

  const flow = (sink: BodySink): BodyFlow => {
    let paused = true
    let pumping = false
    let done = false
    const pump = async () => {
      if (pumping) return
      pumping = true
      try {
        while (!paused && !done) {
          const chunk = await next()
          if (done) return
          if (chunk === undefined) {
            done = true
            sink.end()
            return
          }
          sink.chunk(chunk)
        }
      } catch (error) {
        if (!done) {
          done = true
          release()
          sink.error(failureOf(reason() ?? error, "body"))
        }
      } finally {
        pumping = false
      }
    }
    return {
      resume: () => {
        paused = false
        void pump()
      },
      pause: () => {
        paused = true
      },
      cancel: () => {
        done = true
        release()
      }
    }
  }

  return { text, prefix, next: opening, flow, discard: release }
}

/**
 * The transport over `fetch` (the runtime's own unless one is given).
 *
 * @category layers
 */
export const layerWith = (fetchImpl: typeof fetch = globalThis.fetch): Layer.Layer<Transport> =>
  Layer.succeed(Transport)({
    send: (request: TransportRequest) =>
      Effect.tryPromise({
        try: async (signal): Promise<TransportResponse> => {
          const timers = new Timers(request.deadlines, request.channel.timeouts.idleMs)
          const stop = () => timers.controller.abort(signal.reason)
          signal.addEventListener("abort", stop, { once: true })
          timers.firstByte(request.deadlines)
          try {
            const response = await fetchImpl(request.url, {
              method: request.method,
              headers: request.headers,
              // The engine's bytes are never backed by shared memory.
              ...(request.body === undefined ? {} : { body: request.body as string | Uint8Array<ArrayBuffer> }),
              signal: timers.controller.signal
            })
            timers.rest()
            const headers: Record<string, string> = {}
            response.headers.forEach((value, name) => {
              headers[name.toLowerCase()] = value
            })
            return { status: response.status, headers, body: bodyOf(response, timers, request.deadlines) }
          } catch (error) {
            timers.clear()
            throw timers.controller.signal.reason instanceof Expired ? timers.controller.signal.reason : error
          } finally {
            signal.removeEventListener("abort", stop)
          }
        },
        catch: (error) => failureOf(error, "send")
      })
  })

/**
 * The transport over the runtime's `fetch`.
 *
 * @category layers
 */
export const layer: Layer.Layer<Transport> = Layer.suspend(() => layerWith(globalThis.fetch))

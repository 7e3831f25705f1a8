/**
 * Low-level response writing shared by all dialects: plain JSON bodies,
 * lazily generated large JSON bodies, and SSE / JSON-array streams with the
 * scenario's interval, cut and stall controls. Everything respects
 * backpressure (`res.write` returning false → wait for 'drain').
 */
import type { OutgoingHttpHeaders, ServerResponse } from "node:http"
import { setTimeout as sleep } from "node:timers/promises"
import { filler, type TextAnswer } from "./Content.ts"
import type { Scenario } from "./Scenario.ts"

/** What a dialect handler needs to know about the call. */
export interface CallContext {
  /** Per-server request number; ids in answers are derived from it. */
  readonly seq: number
  readonly model: string
  readonly scenario: Scenario
  /** Extra response headers (request ids). */
  readonly headers: OutgoingHttpHeaders
}

/** Placeholder for the text of lazily generated answers; replaced by the generated chunks. */
export const SENTINEL = "\u0000fake-upstream-content\u0000"
const SENTINEL_JSON = JSON.stringify(SENTINEL)

/** Split a JSON document around the quoted sentinel: [prefix ending with `"`, suffix starting with `"`]. */
export const splitAtSentinel = (json: string): readonly [string, string] => {
  const at = json.indexOf(SENTINEL_JSON)
  return [json.slice(0, at + 1), json.slice(at + SENTINEL_JSON.length - 1)]
}

/** A stream as frames: `head` (role chunk, message_start...), `count` content frames, then `tail`. */
export interface StreamPlan {
  readonly contentType: string
  readonly headers?: OutgoingHttpHeaders
  readonly head: string
  readonly count: number
  readonly frame: (i: number) => string
  readonly tail: () => string
}

/** Frames are coalesced into writes of about this size when no interval is set. */
const BATCH_CHARS = 16 * 1024

export const sendJson = (
  res: ServerResponse,
  status: number,
  body: string,
  headers?: OutgoingHttpHeaders
): void => {
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body)
  })
  res.end(body)
}

const waitDrainOrClose = (res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done)
      res.off("close", done)
      resolve()
    }
    res.on("drain", done)
    res.on("close", done)
  })

/** Tracks whether the client went away, so generators stop early. */
const closeFlag = (res: ServerResponse): { closed: boolean } => {
  const flag = { closed: res.destroyed }
  res.once("close", () => {
    flag.closed = true
  })
  return flag
}

/** Write `data`; wait for 'drain' when the socket buffer is full. */
const write = async (res: ServerResponse, data: string): Promise<void> => {
  if (data.length === 0) return
  if (!res.write(data)) await waitDrainOrClose(res)
}

/**
 * Kill the connection after everything written so far reached the kernel:
 * "close" ends it with a FIN but without the final chunk (the client sees a
 * truncated body), "reset" sends a TCP RST.
 */
export const cutConnection = async (res: ServerResponse, mode: "close" | "reset"): Promise<void> => {
  const socket = res.socket
  if (socket === null) return
  // 'drain' only fires after a write returned false, so poll until the
  // socket's buffer is empty (bounded, in case the client stopped reading).
  for (let waited = 0; socket.writableLength > 0 && !socket.destroyed && waited < 5000; waited++) {
    await sleep(1)
  }
  if (socket.destroyed) return
  if (mode === "reset") socket.resetAndDestroy()
  else socket.destroy()
}

const escapeJsonString = (text: string): string => {
  const quoted = JSON.stringify(text)
  return quoted.slice(1, quoted.length - 1)
}

/**
 * Write a JSON body whose text field is a large lazy answer: `prefix`, then the
 * JSON-escaped chunks, then `suffix`, generated piece by piece.
 */
export const sendLazyJson = async (
  res: ServerResponse,
  headers: OutgoingHttpHeaders,
  prefix: string,
  answer: TextAnswer,
  suffix: string
): Promise<void> => {
  res.writeHead(200, { ...headers, "content-type": "application/json" })
  const flag = closeFlag(res)
  let batch = prefix
  let lastChunk: string | undefined
  let lastEscaped = ""
  for (let i = 0; i < answer.count; i++) {
    const chunk = answer.chunk(i)
    if (chunk !== lastChunk) {
      lastChunk = chunk
      lastEscaped = escapeJsonString(chunk)
    }
    batch += lastEscaped
    if (batch.length >= BATCH_CHARS) {
      await write(res, batch)
      batch = ""
      if (flag.closed) return
    }
  }
  res.end(batch + suffix)
}

/** Run a stream plan with the scenario's interval / cut / stall controls. */
export const sendStream = async (res: ServerResponse, plan: StreamPlan, scenario: Scenario): Promise<void> => {
  res.writeHead(200, {
    ...plan.headers,
    "content-type": plan.contentType,
    "cache-control": "no-cache"
  })
  res.flushHeaders()
  const flag = closeFlag(res)
  const cutAt = scenario.cutAfter
  const stallAt = scenario.stallAfter
  // The earlier of cut/stall wins; ties go to the cut.
  const stopAt = cutAt === undefined ? stallAt : stallAt === undefined ? cutAt : Math.min(cutAt, stallAt)
  const cut = stopAt !== undefined && stopAt === cutAt
  const stop = async (batch: string): Promise<void> => {
    await write(res, batch)
    if (cut) await cutConnection(res, scenario.cutMode)
    // A stall simply never writes again; the socket stays open until the
    // client gives up or the server is closed.
  }
  const interval = scenario.chunkIntervalMs
  let batch = plan.head
  for (let i = 0; i < plan.count; i++) {
    if (i === stopAt) return stop(batch)
    batch += plan.frame(i)
    if (interval > 0) {
      await write(res, batch)
      batch = ""
      if (flag.closed) return
      await sleep(interval)
      if (flag.closed) return
    } else if (batch.length >= BATCH_CHARS) {
      await write(res, batch)
      batch = ""
      if (flag.closed) return
    }
  }
  // Fewer content chunks than the cut/stall point: never finish cleanly.
  if (stopAt !== undefined) return stop(batch)
  if (scenario.lineBytes !== undefined) return endlessLine(res, batch, scenario.lineBytes, flag)
  res.end(batch + plan.tail())
}

/** Size of the writes of an endless line. */
const LINE_PIECE_BYTES = 64 * 1024

/**
 * After what was written so far, one stream line of `bytes` bytes that never
 * ends (`data: ` and filler, no line end), generated piece by piece with
 * backpressure; then the connection ends.
 */
const endlessLine = async (
  res: ServerResponse,
  batch: string,
  bytes: number,
  flag: { closed: boolean }
): Promise<void> => {
  await write(res, batch + "data: ")
  const piece = filler(LINE_PIECE_BYTES)
  for (let sent = 0; sent < bytes; sent += piece.length) {
    if (flag.closed) return
    await write(res, bytes - sent >= piece.length ? piece : piece.slice(0, bytes - sent))
  }
  res.end()
}

/** Memoise a frame builder on the identity of its input chunk (filler chunks repeat). */
export const memoFrame = (build: (chunk: string) => string): (chunk: string) => string => {
  let lastChunk: string | undefined
  let lastFrame = ""
  return (chunk) => {
    if (chunk !== lastChunk) {
      lastChunk = chunk
      lastFrame = build(chunk)
    }
    return lastFrame
  }
}

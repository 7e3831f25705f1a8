/**
 * A test OTLP/HTTP receiver: a real HTTP server on an ephemeral port that
 * takes `POST /v1/traces` as a collector does and records what it decodes.
 *
 * Protobuf bodies are decoded with the OpenTelemetry project's own code
 * generated from the official opentelemetry-proto definitions (the protobufjs
 * static module `@opentelemetry/otlp-transformer` shipped up to 0.214; a dev
 * dependency, tests only). JSON bodies are checked against the same
 * definitions (OTLP/JSON's hex ids turned into bytes, then the message
 * verified) before they are recorded. Like a collector it refuses what it
 * cannot read: another content type (415), a body that does not decode (400).
 *
 * Its behaviour can be switched: `accept` (200, the default), `refuse`
 * (answers a status), `hang` (reads the request and never answers),
 * `partial` (200 with a partial success rejecting some spans).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { createRequire } from "node:module"
import { gunzipSync } from "node:zlib"

interface ProtoMessage {
  readonly decode: (bytes: Uint8Array) => unknown
  readonly encode: (message: unknown) => { finish: () => Uint8Array }
  readonly verify: (object: unknown) => string | null
  readonly fromObject: (object: unknown) => unknown
  readonly toObject: (message: unknown, options: Record<string, unknown>) => Record<string, unknown>
}

const generated = createRequire(import.meta.url)("@opentelemetry/otlp-transformer/build/src/generated/root.js") as {
  opentelemetry: {
    proto: {
      collector: {
        trace: { v1: { ExportTraceServiceRequest: ProtoMessage; ExportTraceServiceResponse: ProtoMessage } }
      }
    }
  }
}
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = generated.opentelemetry.proto.collector.trace.v1

/** An attribute value as OTLP carries it, read into a JavaScript value. */
export type Value = string | number | boolean | ReadonlyArray<Value> | { readonly [key: string]: Value } | null

/** A span as received, ids in lower-case hex, attributes as a record. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly traceState: string | undefined
  readonly name: string
  /** OTLP's numbers: 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly startTimeUnixNano: bigint
  readonly endTimeUnixNano: bigint
  readonly attributes: Readonly<Record<string, Value>>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Readonly<Record<string, Value>> }>
  readonly status: { readonly code: number; readonly message: string | undefined }
  readonly flags: number
  /** The resource's attributes (service.name, ...). */
  readonly resource: Readonly<Record<string, Value>>
  readonly scope: string
}

/** One export request as received. */
export interface ReceivedRequest {
  readonly path: string
  readonly contentType: string
  readonly contentEncoding: string | undefined
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly spans: ReadonlyArray<ReceivedSpan>
}

export type Behaviour =
  | { readonly _tag: "accept" }
  | { readonly _tag: "refuse"; readonly status: number; readonly retryAfter?: string }
  | { readonly _tag: "hang" }
  | { readonly _tag: "partial"; readonly rejected: number }

export interface OtlpReceiver {
  /** The base endpoint (`http://127.0.0.1:PORT`): `/v1/traces` is where spans go. */
  readonly url: string
  readonly requests: ReadonlyArray<ReceivedRequest>
  /** Every span received so far, in order. */
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  /** Export requests that arrived, answered or not (a hanging receiver counts them too). */
  readonly attempts: () => number
  /** Requests refused because they did not decode (should stay 0). */
  readonly malformed: ReadonlyArray<string>
  behave(behaviour: Behaviour): void
  /** Waits until `check` holds of the spans received (polling), or fails after `timeoutMs`. */
  waitFor(
    check: (spans: ReadonlyArray<ReceivedSpan>) => boolean,
    timeoutMs?: number
  ): Promise<ReadonlyArray<ReceivedSpan>>
  close(): Promise<void>
}

const hex = (value: unknown): string =>
  typeof value === "string" ? Buffer.from(value, "base64").toString("hex") : value instanceof Uint8Array
    ? Buffer.from(value).toString("hex")
    : ""

/** An `AnyValue` of the protobuf-decoded (toObject) or JSON form, as a JavaScript value. */
const valueOf = (any: Record<string, unknown> | undefined): Value => {
  if (any === undefined || any === null) return null
  if ("stringValue" in any) return any["stringValue"] as string
  if ("boolValue" in any) return any["boolValue"] as boolean
  if ("intValue" in any) return Number(any["intValue"])
  if ("doubleValue" in any) return Number(any["doubleValue"])
  if ("arrayValue" in any) {
    return ((any["arrayValue"] as { values?: Array<Record<string, unknown>> }).values ?? []).map(valueOf)
  }
  if ("kvlistValue" in any) {
    return attributesOf((any["kvlistValue"] as { values?: Array<Record<string, unknown>> }).values)
  }
  return null
}

const attributesOf = (list: ReadonlyArray<Record<string, unknown>> | undefined): Record<string, Value> => {
  const out: Record<string, Value> = {}
  for (const kv of list ?? []) out[kv["key"] as string] = valueOf(kv["value"] as Record<string, unknown> | undefined)
  return out
}

/**
 * The spans of an `ExportTraceServiceRequest` in the plain-object form
 * (protobuf's `toObject` with ids as base64, or OTLP/JSON's with hex ids).
 */
const spansOf = (request: Record<string, unknown>, ids: "base64" | "hex"): Array<ReceivedSpan> => {
  const id = (value: unknown): string => ids === "hex" ? String(value ?? "") : hex(value)
  const spans: Array<ReceivedSpan> = []
  for (const rs of (request["resourceSpans"] as Array<Record<string, unknown>> | undefined) ?? []) {
    const resource = attributesOf((rs["resource"] as { attributes?: Array<Record<string, unknown>> })?.attributes)
    for (const ss of (rs["scopeSpans"] as Array<Record<string, unknown>> | undefined) ?? []) {
      const scope = String((ss["scope"] as { name?: string } | undefined)?.name ?? "")
      for (const s of (ss["spans"] as Array<Record<string, unknown>> | undefined) ?? []) {
        const parent = id(s["parentSpanId"])
        const status = (s["status"] ?? {}) as { code?: number | string; message?: string }
        spans.push({
          traceId: id(s["traceId"]),
          spanId: id(s["spanId"]),
          parentSpanId: parent === "" ? undefined : parent,
          traceState: s["traceState"] === undefined || s["traceState"] === "" ? undefined : String(s["traceState"]),
          name: String(s["name"]),
          kind: Number(s["kind"] ?? 0),
          startTimeUnixNano: BigInt(String(s["startTimeUnixNano"] ?? "0")),
          endTimeUnixNano: BigInt(String(s["endTimeUnixNano"] ?? "0")),
          attributes: attributesOf(s["attributes"] as Array<Record<string, unknown>> | undefined),
          events: ((s["events"] as Array<Record<string, unknown>> | undefined) ?? []).map((event) => ({
            name: String(event["name"]),
            attributes: attributesOf(event["attributes"] as Array<Record<string, unknown>> | undefined)
          })),
          status: {
            code: typeof status.code === "string" ? statusCodes[status.code] ?? -1 : Number(status.code ?? 0),
            message: status.message === undefined || status.message === "" ? undefined : status.message
          },
          flags: Number(s["flags"] ?? 0),
          resource,
          scope
        })
      }
    }
  }
  return spans
}

const statusCodes: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 }

const int64Fields = new Set(["startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue"])

/**
 * OTLP/JSON's 64-bit integers, which it writes as decimal strings, as the numbers protobufjs' plain objects hold
 * (a string of anything but digits stays a string, and fails the verification).
 */
const int64sAsNumbers = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(int64sAsNumbers)
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) {
    out[key] = int64Fields.has(key) && typeof field === "string" && /^-?\d+$/.test(field)
      ? Number(field)
      : int64sAsNumbers(field)
  }
  return out
}

/** OTLP/JSON's hex ids as base64, so the official definitions can verify the rest of the message. */
const jsonToProtoObject = (json: Record<string, unknown>): Record<string, unknown> => {
  const request = int64sAsNumbers(json) as Record<string, unknown>
  const b64 = (value: unknown) => typeof value === "string" ? Buffer.from(value, "hex").toString("base64") : value
  return {
    ...request,
    resourceSpans: ((request["resourceSpans"] as Array<Record<string, unknown>> | undefined) ?? []).map((rs) => ({
      ...rs,
      scopeSpans: ((rs["scopeSpans"] as Array<Record<string, unknown>> | undefined) ?? []).map((ss) => ({
        ...ss,
        spans: ((ss["spans"] as Array<Record<string, unknown>> | undefined) ?? []).map((s) => ({
          ...s,
          traceId: b64(s["traceId"]),
          spanId: b64(s["spanId"]),
          ...(s["parentSpanId"] !== undefined ? { parentSpanId: b64(s["parentSpanId"]) } : {}),
          links: ((s["links"] as Array<Record<string, unknown>> | undefined) ?? []).map((link) => ({
            ...link,
            traceId: b64(link["traceId"]),
            spanId: b64(link["spanId"])
          }))
        }))
      }))
    }))
  }
}

const checkJsonIds = (request: Record<string, unknown>): string | undefined => {
  for (const rs of (request["resourceSpans"] as Array<Record<string, unknown>> | undefined) ?? []) {
    for (const ss of (rs["scopeSpans"] as Array<Record<string, unknown>> | undefined) ?? []) {
      for (const s of (ss["spans"] as Array<Record<string, unknown>> | undefined) ?? []) {
        if (!/^[0-9a-f]{32}$/.test(String(s["traceId"]))) return `traceId ${String(s["traceId"])} is not 32 hex digits`
        if (!/^[0-9a-f]{16}$/.test(String(s["spanId"]))) return `spanId ${String(s["spanId"])} is not 16 hex digits`
        if (s["parentSpanId"] !== undefined && !/^[0-9a-f]{16}$/.test(String(s["parentSpanId"]))) {
          return `parentSpanId ${String(s["parentSpanId"])} is not 16 hex digits`
        }
      }
    }
  }
  return undefined
}

/**
 * Decodes an `ExportTraceServiceRequest` protobuf body with the official definitions (throws when it does not
 * decode).
 */
export const decodeTraces = (body: Uint8Array): Array<ReceivedSpan> =>
  spansOf(
    ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), {
      longs: String,
      bytes: String,
      defaults: false
    }),
    "base64"
  )

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.once("end", () => resolve(Buffer.concat(chunks)))
    req.once("error", reject)
  })

/** Starts a receiver on an ephemeral port of 127.0.0.1. */
export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const requests: Array<ReceivedRequest> = []
  const malformed: Array<string> = []
  const hanging = new Set<ServerResponse>()
  let attempts = 0
  let behaviour: Behaviour = { _tag: "accept" }

  const decode = (contentType: string, body: Buffer): Array<ReceivedSpan> | string => {
    if (contentType.startsWith("application/x-protobuf")) {
      try {
        return decodeTraces(body)
      } catch (error) {
        return `protobuf did not decode: ${String(error)}`
      }
    }
    if (contentType.startsWith("application/json")) {
      let parsed: Record<string, unknown>
      try {
        parsed = JSON.parse(body.toString("utf8")) as Record<string, unknown>
      } catch (error) {
        return `JSON did not parse: ${String(error)}`
      }
      const ids = checkJsonIds(parsed)
      if (ids !== undefined) return ids
      const invalid = ExportTraceServiceRequest.verify(jsonToProtoObject(parsed))
      if (invalid !== null) return `JSON does not match the OTLP definitions: ${invalid}`
      return spansOf(parsed, "hex")
    }
    return "unsupported"
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req)
      attempts++
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end()
        return
      }
      if (behaviour._tag === "hang") {
        hanging.add(res)
        res.once("close", () => hanging.delete(res))
        return
      }
      const contentType = String(req.headers["content-type"] ?? "")
      const encoding = req.headers["content-encoding"]
      let body = raw
      if (encoding === "gzip") body = gunzipSync(raw)
      else if (encoding !== undefined && encoding !== "identity") {
        res.writeHead(415).end()
        return
      }
      const spans = decode(contentType, body)
      if (spans === "unsupported") {
        malformed.push(`content type ${contentType}`)
        res.writeHead(415, { "content-type": "text/plain" }).end("unsupported content type")
        return
      }
      if (typeof spans === "string") {
        malformed.push(spans)
        res.writeHead(400, { "content-type": "text/plain" }).end(spans)
        return
      }
      if (behaviour._tag === "refuse") {
        res.writeHead(behaviour.status, {
          "content-type": "text/plain",
          ...(behaviour.retryAfter !== undefined ? { "retry-after": behaviour.retryAfter } : {})
        }).end("refused")
        return
      }
      requests.push({
        path: req.url,
        contentType,
        contentEncoding: typeof encoding === "string" ? encoding : undefined,
        headers: req.headers,
        spans
      })
      const rejected = behaviour._tag === "partial" ? behaviour.rejected : 0
      if (contentType.startsWith("application/json")) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify(rejected > 0 ? { partialSuccess: { rejectedSpans: String(rejected) } } : {})
        )
      } else {
        const answer = ExportTraceServiceResponse.encode(
          ExportTraceServiceResponse.fromObject(
            rejected > 0 ? { partialSuccess: { rejectedSpans: rejected, errorMessage: "too many" } } : {}
          )
        ).finish()
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end(Buffer.from(answer))
      }
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")

  const spans = () => requests.flatMap((request) => request.spans)
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    spans,
    attempts: () => attempts,
    malformed,
    behave: (next) => {
      behaviour = next
    },
    waitFor: async (check, timeoutMs = 10_000) => {
      const until = Date.now() + timeoutMs
      while (!check(spans())) {
        if (Date.now() > until) {
          throw new Error(
            `the receiver did not get the spans expected; it has: ${JSON.stringify(spans().map((s) => s.name))}`
          )
        }
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return spans()
    },
    close: async () => {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * What the Bedrock fake checks of every request, the way AWS does, written
 * from AWS's published description of Signature Version 4 (and not with the
 * signer the gateway uses, so that one checks the other): the canonical
 * request is rebuilt from the request as it arrived (method, path with each
 * segment encoded again, sorted query, the signed headers, SHA-256 of the
 * body's bytes), signed with the secret of the access key the credential
 * names, and compared. The refusals are AWS's: their status (403), their
 * `x-amzn-ErrorType` and their words.
 *
 * Also the binary event-stream framing ConverseStream answers in, written
 * here with Node's CRC32 (`zlib.crc32`), again apart from the codec the
 * gateway reads it with.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { crc32 } from "node:zlib"

/** An access key the fake knows: its secret and, for temporary credentials, the session token and its expiry. */
export interface AwsCredential {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string | undefined
  /** Epoch milliseconds after which the session token is expired. */
  readonly expiresAt?: number | undefined
}

/** A refusal, as AWS writes it. */
export interface AwsRefusal {
  readonly status: number
  /** The `x-amzn-ErrorType` (without namespace). */
  readonly type: string | undefined
  /** The body (AWS's own spelling: `message`, or `Message` for some front-door errors). */
  readonly body: Readonly<Record<string, string>>
}

export type Verdict =
  | { readonly ok: true; readonly principal: string }
  | { readonly ok: false; readonly refusal: AwsRefusal }

export interface VerifyOptions {
  readonly region: string
  readonly service: string
  readonly credentials: ReadonlyArray<AwsCredential>
  readonly apiKeys: ReadonlyArray<string>
  readonly now: number
}

const refuse = (type: string | undefined, message: string, field: "message" | "Message" = "message"): Verdict => ({
  ok: false,
  refusal: { status: 403, type, body: { [field]: message } }
})

const INVALID_TOKEN = "The security token included in the request is invalid."
const MISMATCH =
  "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

const first = (value: string | Array<string> | undefined): string | undefined =>
  Array.isArray(value) ? value.join(",") : value

/** RFC 3986 encoding of everything but the unreserved characters, as SigV4 wants. */
export const uriEncode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex")
const hmac = (key: Buffer | string, data: string): Buffer => createHmac("sha256", key).update(data).digest()

/** `20261128T120000Z` as epoch milliseconds, or NaN. */
const parseAmzDate = (text: string): number => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text)
  return m === null ? Number.NaN : Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)
}

const amzDate = (millis: number): string => new Date(millis).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "")

/** The canonical request of a request as it arrived. */
export const canonicalRequest = (
  method: string,
  rawUrl: string,
  headers: IncomingHttpHeaders,
  signedHeaders: ReadonlyArray<string>,
  body: Buffer
): string => {
  const q = rawUrl.indexOf("?")
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q)
  // Every segment as it was sent, encoded once more (all services but S3).
  const canonicalUri = path.split("/").map((segment) => uriEncode(segment)).join("/") || "/"
  const query = q < 0 ? "" : rawUrl.slice(q + 1)
  const pairs = query.length === 0
    ? []
    : query.split("&").map((pair) => {
      const eq = pair.indexOf("=")
      const key = decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, " "))
      const value = eq < 0 ? "" : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, " "))
      return [uriEncode(key), uriEncode(value)] as const
    })
  pairs.sort(([ak, av], [bk, bv]) => ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0)
  const canonicalQuery = pairs.map(([k, v]) => `${k}=${v}`).join("&")
  const canonicalHeaders = signedHeaders
    .map((name) => `${name}:${(first(headers[name]) ?? "").trim().replace(/\s+/g, " ")}\n`)
    .join("")
  return [method, canonicalUri, canonicalQuery, canonicalHeaders, signedHeaders.join(";"), sha256(body)].join("\n")
}

/**
 * Checks a request's authorisation: a Signature Version 4 signature by a
 * known access key (its session token, if it has one, sent, signed and not
 * expired), or a known Bedrock API key as a bearer token.
 */
export const verifyRequest = (
  method: string,
  rawUrl: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  options: VerifyOptions
): Verdict => {
  const authorization = first(headers.authorization)
  if (authorization === undefined || authorization.length === 0) {
    return refuse("MissingAuthenticationTokenException", "Missing Authentication Token")
  }
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization)
  if (bearer !== null) {
    const key = bearer[1]!.trim()
    return options.apiKeys.includes(key)
      ? { ok: true, principal: `api-key:${key.slice(0, 8)}` }
      : refuse(undefined, "Authentication failed: Please make sure your API Key is valid.", "Message")
  }
  const match = /^AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})\s*$/
    .exec(
      authorization
    )
  if (match === null) {
    return {
      ok: false,
      refusal: {
        status: 400,
        type: "IncompleteSignatureException",
        body: { message: `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.` }
      }
    }
  }
  const [, credential, signedList, signature] = match
  const scope = credential!.split("/")
  if (scope.length !== 5 || scope[4] !== "aws4_request") {
    return refuse("IncompleteSignatureException", `Credential should be scoped to a valid region.`)
  }
  const [accessKeyId, day, region, service] = scope as [string, string, string, string]
  const known = options.credentials.find((c) => c.accessKeyId === accessKeyId)
  if (known === undefined) return refuse("UnrecognizedClientException", INVALID_TOKEN)
  const date = first(headers["x-amz-date"])
  if (date === undefined) {
    return refuse(
      "IncompleteSignatureException",
      "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
    )
  }
  const at = parseAmzDate(date)
  if (Number.isNaN(at)) {
    return refuse("IncompleteSignatureException", `Date must be in ISO-8601 'basic format'. Got '${date}'.`)
  }
  if (date.slice(0, 8) !== day) {
    return refuse(
      "InvalidSignatureException",
      `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${
        date.slice(0, 8)
      }', from '${date}'.`
    )
  }
  if (region !== options.region) {
    return refuse("InvalidSignatureException", `Credential should be scoped to a valid region, not '${region}'.`)
  }
  if (service !== options.service) {
    return refuse("InvalidSignatureException", `Credential should be scoped to correct service: '${options.service}'.`)
  }
  const skew = 5 * 60_000
  if (at < options.now - skew) {
    return refuse(
      "InvalidSignatureException",
      `Signature expired: ${date} is now earlier than ${amzDate(options.now - skew)} (${amzDate(options.now)} - 5 min.)`
    )
  }
  if (at > options.now + skew) {
    return refuse(
      "InvalidSignatureException",
      `Signature not yet current: ${date} is still later than ${amzDate(options.now + skew)} (${
        amzDate(options.now)
      } + 5 min.)`
    )
  }
  const signedHeaders = signedList!.split(";")
  if (!signedHeaders.includes("host")) {
    return refuse(
      "InvalidSignatureException",
      "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."
    )
  }
  if (known.sessionToken !== undefined) {
    const token = first(headers["x-amz-security-token"])
    if (token !== known.sessionToken) return refuse("UnrecognizedClientException", INVALID_TOKEN)
    if (!signedHeaders.includes("x-amz-security-token")) return refuse("InvalidSignatureException", MISMATCH)
    if (known.expiresAt !== undefined && options.now >= known.expiresAt) {
      return refuse("ExpiredTokenException", "The security token included in the request is expired")
    }
  }
  const canonical = canonicalRequest(method, rawUrl, headers, signedHeaders, body)
  const stringToSign = ["AWS4-HMAC-SHA256", date, `${day}/${region}/${service}/aws4_request`, sha256(canonical)].join(
    "\n"
  )
  const key = hmac(hmac(hmac(hmac(`AWS4${known.secretAccessKey}`, day), region), service), "aws4_request")
  const expected = createHmac("sha256", key).update(stringToSign).digest()
  const given = Buffer.from(signature!, "hex")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return refuse("InvalidSignatureException", MISMATCH)
  }
  return { ok: true, principal: accessKeyId }
}

// ---------------------------------------------------------------------------
// Event stream
// ---------------------------------------------------------------------------

/** One event-stream message: string headers (type 7) and a payload, with both CRC32s. */
export const eventStreamFrame = (headers: Readonly<Record<string, string>>, payload: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  for (const name of Object.keys(headers)) {
    const nameBytes = Buffer.from(name, "utf8")
    const value = Buffer.from(headers[name]!, "utf8")
    const head = Buffer.alloc(1 + nameBytes.length + 3)
    head.writeUInt8(nameBytes.length, 0)
    nameBytes.copy(head, 1)
    head.writeUInt8(7, 1 + nameBytes.length)
    head.writeUInt16BE(value.length, 2 + nameBytes.length)
    parts.push(head, value)
  }
  const headerBytes = Buffer.concat(parts)
  const total = 12 + headerBytes.length + payload.length + 4
  const frame = Buffer.alloc(total)
  frame.writeUInt32BE(total, 0)
  frame.writeUInt32BE(headerBytes.length, 4)
  frame.writeUInt32BE(crc32(frame.subarray(0, 8)), 8)
  headerBytes.copy(frame, 12)
  payload.copy(frame, 12 + headerBytes.length)
  frame.writeUInt32BE(crc32(frame.subarray(0, total - 4)), total - 4)
  return frame
}

/**
 * A `contentBlockDelta` event whose frame is `total` bytes (its text filler),
 * generated piece by piece (`pieceBytes` at a time), both CRCs right: what an
 * upstream sending one huge event writes. The gateway must refuse it from its
 * prelude (`max_event_bytes`) rather than hold it.
 */
export function* hugeEventFrame(total: number, pieceBytes = 64 * 1024): Generator<Buffer> {
  const headers = { ":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event" }
  const empty = eventStreamFrame(headers, Buffer.alloc(0))
  const headerBytes = empty.subarray(12, empty.length - 4)
  const open = Buffer.from("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"", "utf8")
  const close = Buffer.from("\"}}", "utf8")
  const fill = Math.max(0, total - 16 - headerBytes.length - open.length - close.length)
  const size = 12 + headerBytes.length + open.length + fill + close.length + 4
  const prelude = Buffer.alloc(12)
  prelude.writeUInt32BE(size, 0)
  prelude.writeUInt32BE(headerBytes.length, 4)
  prelude.writeUInt32BE(crc32(prelude.subarray(0, 8)), 8)
  let crc = crc32(prelude)
  const head = Buffer.concat([prelude, headerBytes, open])
  crc = crc32(head.subarray(12), crc)
  yield head
  const piece = Buffer.alloc(pieceBytes, "a")
  for (let sent = 0; sent < fill; sent += piece.length) {
    const part = fill - sent >= piece.length ? piece : piece.subarray(0, fill - sent)
    crc = crc32(part, crc)
    yield part
  }
  const tail = Buffer.alloc(close.length + 4)
  close.copy(tail)
  tail.writeUInt32BE(crc32(close, crc), close.length)
  yield tail
}

/** An `event` message of a ConverseStream. */
export const eventFrame = (eventType: string, payload: unknown): Buffer =>
  eventStreamFrame(
    { ":event-type": eventType, ":content-type": "application/json", ":message-type": "event" },
    Buffer.from(JSON.stringify(payload), "utf8")
  )

/** An `exception` message of a ConverseStream. */
export const exceptionFrame = (exceptionType: string, message: string): Buffer =>
  eventStreamFrame(
    { ":exception-type": exceptionType, ":content-type": "application/json", ":message-type": "exception" },
    Buffer.from(JSON.stringify({ message }), "utf8")
  )

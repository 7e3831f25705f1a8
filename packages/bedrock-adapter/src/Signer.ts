/**
 * How a request to Bedrock is authorised: AWS Signature Version 4 over the
 * request's final bytes (service `bedrock`, the channel's region; an access
 * key id, its secret and, for temporary credentials, a session token), or a
 * Bedrock API key sent as `Authorization: Bearer`.
 *
 * The signature is AWS's own `@smithy/signature-v4`, given SHA-256 and
 * HMAC-SHA-256 from the runtime's WebCrypto (`crypto.subtle`, in Node, Bun,
 * Deno, browsers and workers), so nothing here needs Node. It covers the
 * method, the path as sent (each segment encoded again, as AWS's canonical
 * request wants for every service but S3), the query, the headers given
 * (`host` always; `x-amz-date` and `x-amz-security-token` added) and the
 * SHA-256 of the body: a body changed after signing, a header signed but
 * sent otherwise, or a clock more than five minutes off is refused by AWS
 * with `InvalidSignatureException`. Signing is asynchronous (WebCrypto is),
 * and the time is a parameter: callers pass their clock's.
 *
 * @since 0.1.0
 */
import { Utf8 } from "@modelgate/core"
import { SignatureV4 } from "@smithy/signature-v4"
import { Clock, Effect } from "effect"
import { SIGNING_SERVICE } from "./Endpoint.ts"

/** An access key pair, and the session token of temporary credentials. @category models */
export interface AwsCredentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string | undefined
}

/** The request to sign: what will be sent, exactly. @category models */
export interface RequestToSign {
  readonly method: string
  /** The full URL, its path encoded as it will be sent (`Endpoint.converseUrl`). */
  readonly url: string
  /** Headers that will be sent and are to be signed (`content-type`, the channel's own); `host` is added. */
  readonly headers: Readonly<Record<string, string>>
  /** The body's final bytes (or text, as UTF-8). */
  readonly body: Uint8Array | string
}

/** What signing needs besides the request. @category models */
export interface SigningOptions {
  readonly credentials: AwsCredentials
  readonly region: string
  /** Default `bedrock`. */
  readonly service?: string | undefined
  /** The signing time (the caller's clock). */
  readonly now: Date
}

type SourceData = string | ArrayBuffer | ArrayBufferView

const bytesOf = (data: SourceData): Uint8Array =>
  typeof data === "string"
    ? Utf8.encode(data)
    : data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength)

/**
 * SHA-256 (or, with a secret, HMAC-SHA-256) from WebCrypto, in the shape
 * `@smithy/signature-v4` takes (`update`, `digest`, `reset`).
 *
 * @category hashing
 */
export class WebCryptoSha256 {
  private readonly secret: Uint8Array | undefined
  private chunks: Array<Uint8Array> = []

  constructor(secret?: SourceData) {
    this.secret = secret === undefined ? undefined : bytesOf(secret)
  }

  update(data: SourceData): void {
    this.chunks.push(bytesOf(data))
  }

  async digest(): Promise<Uint8Array> {
    let data: Uint8Array
    if (this.chunks.length === 1) data = this.chunks[0]!
    else {
      data = new Uint8Array(this.chunks.reduce((n, chunk) => n + chunk.length, 0))
      let at = 0
      for (const chunk of this.chunks) {
        data.set(chunk, at)
        at += chunk.length
      }
    }
    if (this.secret === undefined) return new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource))
    const key = await crypto.subtle.importKey(
      "raw",
      this.secret as BufferSource,
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"]
    )
    return new Uint8Array(await crypto.subtle.sign("HMAC", key, data as BufferSource))
  }

  reset(): void {
    this.chunks = []
  }
}

const signers = new Map<string, SignatureV4>()

/** One signer per credentials, region and service: it caches the day's signing key. */
const signerFor = (options: SigningOptions): SignatureV4 => {
  const service = options.service ?? SIGNING_SERVICE
  const { accessKeyId, secretAccessKey, sessionToken } = options.credentials
  const key = `${accessKeyId}\u0000${secretAccessKey}\u0000${sessionToken ?? ""}\u0000${options.region}\u0000${service}`
  let signer = signers.get(key)
  if (signer === undefined) {
    if (signers.size >= 256) signers.clear()
    signer = new SignatureV4({
      credentials: sessionToken === undefined
        ? { accessKeyId, secretAccessKey }
        : { accessKeyId, secretAccessKey, sessionToken },
      region: options.region,
      service,
      sha256: WebCryptoSha256,
      uriEscapePath: true,
      applyChecksum: false
    })
    signers.set(key, signer)
  }
  return signer
}

/**
 * The headers to send with a request signed with AWS Signature Version 4:
 * the request's own, `host`, `x-amz-date`, `x-amz-security-token` (with a
 * session token) and `authorization`. Names in lower case.
 *
 * @example
 * ```ts
 * import { Signer } from "@modelgate/bedrock-adapter"
 *
 * const headers = await Signer.sign(
 *   { method: "POST", url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse", headers: { "content-type": "application/json" }, body },
 *   { credentials: { accessKeyId: "AKID...", secretAccessKey: "..." }, region: "us-east-1", now: new Date() }
 * )
 * // { "content-type": "application/json", host: "bedrock-runtime.us-east-1.amazonaws.com", "x-amz-date": "20261128T170000Z",
 * //   authorization: "AWS4-HMAC-SHA256 Credential=AKID.../20261128/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=..." }
 * ```
 *
 * @category signing
 */
export const sign = async (request: RequestToSign, options: SigningOptions): Promise<Record<string, string>> => {
  const url = new URL(request.url)
  const headers: Record<string, string> = {}
  for (const name of Object.keys(request.headers)) headers[name.toLowerCase()] = request.headers[name]!
  headers.host = url.host
  const query: Record<string, string | Array<string>> = {}
  for (const [name, value] of url.searchParams) {
    const before = query[name]
    query[name] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value]
  }
  const signed = await signerFor(options).sign({
    method: request.method.toUpperCase(),
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port === "" ? {} : { port: Number(url.port) }),
    path: url.pathname,
    query,
    headers,
    body: typeof request.body === "string" ? Utf8.encode(request.body) : request.body
  }, { signingDate: options.now })
  const out: Record<string, string> = {}
  for (const name of Object.keys(signed.headers)) out[name.toLowerCase()] = String(signed.headers[name])
  return out
}

/**
 * `sign` as an Effect whose signing time is the Effect `Clock`'s (a test
 * clock signs as of the time it says).
 *
 * @category signing
 */
export const signEffect = (
  request: RequestToSign,
  options: Omit<SigningOptions, "now">
): Effect.Effect<Record<string, string>> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (millis) => Effect.promise(() => sign(request, { ...options, now: new Date(millis) }))
  )

/**
 * The headers of a request authorised with a Bedrock API key: the request's
 * own and `authorization: Bearer <key>` (nothing is signed).
 *
 * @category api keys
 */
export const bearer = (headers: Readonly<Record<string, string>>, apiKey: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of Object.keys(headers)) out[name.toLowerCase()] = headers[name]!
  out.authorization = `Bearer ${apiKey}`
  return out
}

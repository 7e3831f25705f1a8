/**
 * A Google service account's key (the JSON file Google Cloud issues), and the
 * signed JWT assertion that is exchanged for an access token (OAuth 2.0's
 * JWT bearer grant, RFC 7523, as Google's token endpoint takes it).
 *
 * The assertion is signed RS256 (RSASSA-PKCS1-v1_5 with SHA-256) with the
 * key's private key through the runtime's WebCrypto (`crypto.subtle`, in
 * Node, Bun, Deno, browsers and workers); its header names the key
 * (`kid`: `private_key_id`), its claims are `iss` (the key's
 * `client_email`), `scope` (`https://www.googleapis.com/auth/cloud-platform`),
 * `aud` (the key's `token_uri`), `iat` and `exp` (at most an hour later).
 * The time is a parameter: callers pass their clock's.
 *
 * @since 0.1.0
 */
import { Data, Effect, Result, Schema } from "effect"
import { Base64, Base64Url } from "effect/encoding"

/** The scope Vertex AI calls need. @category constants */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

/** Google's token endpoint (the `token_uri` of every key Google issues). @category constants */
export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"

/** The longest lifetime Google accepts for an assertion, in seconds. @category constants */
export const MAX_ASSERTION_SECONDS = 3600

/** A service-account key, as far as the gateway needs it. @category models */
export interface ServiceAccountKey {
  readonly clientEmail: string
  /** The PEM of the PKCS #8 private key (`-----BEGIN PRIVATE KEY-----`). */
  readonly privateKey: string
  readonly privateKeyId?: string | undefined
  readonly tokenUri: string
  readonly projectId?: string | undefined
}

/** A key file that cannot be used, and why (the field it names). @category errors */
export class KeyError extends Data.TaggedError("KeyError")<{ readonly message: string }> {}

const KeyFile = Schema.Struct({
  type: Schema.optionalKey(Schema.String),
  client_email: Schema.String,
  private_key: Schema.String,
  private_key_id: Schema.optionalKey(Schema.String),
  token_uri: Schema.optionalKey(Schema.String),
  project_id: Schema.optionalKey(Schema.String)
})

const decodeKeyFile = Schema.decodeUnknownResult(KeyFile)

/**
 * Reads a service-account key file (its text, or the parsed JSON). A file
 * that is not JSON, is not a service account's (`type` other than
 * `service_account`), or lacks `client_email` or `private_key` fails with a
 * `KeyError` that says so; `token_uri` defaults to Google's.
 *
 * @category keys
 */
export const parseKey = (file: string | unknown): Result.Result<ServiceAccountKey, KeyError> => {
  let json: unknown = file
  if (typeof file === "string") {
    try {
      json = JSON.parse(file)
    } catch {
      return Result.fail(
        new KeyError({ message: "The service-account key is not JSON: give the key file Google Cloud issued." })
      )
    }
  }
  const decoded = decodeKeyFile(json)
  if (Result.isFailure(decoded)) {
    const missing = ["client_email", "private_key"].filter((field) =>
      typeof (json as Record<string, unknown> | null)?.[field] !== "string"
    )
    return Result.fail(
      new KeyError({
        message: missing.length > 0
          ? `The service-account key has no ${
            missing.map((f) => `'${f}'`).join(" or ")
          }: give the key file Google Cloud issued.`
          : `The service-account key is malformed: ${decoded.failure.message}`
      })
    )
  }
  const key = decoded.success
  if (key.type !== undefined && key.type !== "service_account") {
    return Result.fail(
      new KeyError({
        message: `The key file is of type '${key.type}', not 'service_account': give a service account's key.`
      })
    )
  }
  if (!key.private_key.includes("-----BEGIN PRIVATE KEY-----")) {
    return Result.fail(
      new KeyError({
        message: "The service-account key's 'private_key' is not a PEM private key (-----BEGIN PRIVATE KEY-----)."
      })
    )
  }
  return Result.succeed({
    clientEmail: key.client_email,
    privateKey: key.private_key,
    privateKeyId: key.private_key_id,
    tokenUri: key.token_uri ?? GOOGLE_TOKEN_URI,
    projectId: key.project_id
  })
}

/** The DER bytes of a PEM block. */
const pemBody = (pem: string): Result.Result<Uint8Array, KeyError> => {
  const body = pem.replace(/-----(BEGIN|END)[^-]*-----/g, "").replace(/\s+/g, "")
  const bytes = Base64.decode(body)
  return Result.isFailure(bytes)
    ? Result.fail(
      new KeyError({ message: "The service-account key's 'private_key' is not valid base64 inside its PEM lines." })
    )
    : Result.succeed(bytes.success)
}

/**
 * The key's private key, imported for RS256 signing. A key WebCrypto refuses
 * (not PKCS #8 RSA) fails with a `KeyError`.
 *
 * @category keys
 */
export const importPrivateKey = (key: ServiceAccountKey): Effect.Effect<CryptoKey, KeyError> =>
  Effect.flatMap(
    Effect.fromResult(pemBody(key.privateKey)),
    (der) =>
      Effect.tryPromise({
        try: () =>
          crypto.subtle.importKey(
            "pkcs8",
            der as BufferSource,
            { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
            false,
            ["sign"]
          ),
        catch: (error) =>
          new KeyError({
            message: `The service-account key's private key cannot be used for RS256 signing (${
              error instanceof Error ? error.message : String(error)
            }).`
          })
      })
  )

/** The claims of an assertion. @category assertions */
export interface Claims {
  readonly iss: string
  readonly scope: string
  readonly aud: string
  readonly iat: number
  readonly exp: number
}

/** The claims for `key` at `now` (epoch seconds), valid `lifetimeSeconds` (at most an hour). @category assertions */
export const claims = (
  key: ServiceAccountKey,
  now: number,
  options?: { readonly scope?: string | undefined; readonly lifetimeSeconds?: number | undefined }
): Claims => {
  const iat = Math.floor(now)
  return {
    iss: key.clientEmail,
    scope: options?.scope ?? CLOUD_PLATFORM_SCOPE,
    aud: key.tokenUri,
    iat,
    exp: iat + Math.min(MAX_ASSERTION_SECONDS, Math.max(1, options?.lifetimeSeconds ?? MAX_ASSERTION_SECONDS))
  }
}

/**
 * The signed assertion (`header.claims.signature`, each base64url) for `key`
 * with its imported `privateKey`, at `now` (epoch seconds).
 *
 * @category assertions
 */
export const signAssertion = (
  key: ServiceAccountKey,
  privateKey: CryptoKey,
  now: number,
  options?: { readonly scope?: string | undefined; readonly lifetimeSeconds?: number | undefined }
): Effect.Effect<string> => {
  const header = key.privateKeyId === undefined
    ? { alg: "RS256", typ: "JWT" }
    : { alg: "RS256", typ: "JWT", kid: key.privateKeyId }
  const input = `${Base64Url.encode(JSON.stringify(header))}.${
    Base64Url.encode(JSON.stringify(claims(key, now, options)))
  }`
  return Effect.map(
    Effect.promise(() =>
      crypto.subtle.sign("RSASSA-PKCS1-v1_5", privateKey, new TextEncoder().encode(input) as BufferSource)
    ),
    (signature) => `${input}.${Base64Url.encode(new Uint8Array(signature))}`
  )
}

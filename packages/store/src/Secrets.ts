/**
 * Secrets at rest and the hashing of credentials.
 *
 * - `Secrets`: AES-256-GCM encryption of upstream API keys. A blob is
 *   `v1:<iv base64>:<ciphertext+tag base64>` (12-byte random IV, 16-byte tag).
 * - `KeyHasher`: HMAC-SHA256 (hex) of API-key secrets and redemption codes, so
 *   the database never holds a usable credential and a stolen database cannot
 *   be brute-forced without the server key.
 * - Both keys are derived with HKDF-SHA256 from one master secret under
 *   distinct labels: either the operator's `MODELGATE_SECRET` (passed in as a
 *   `Redacted` string; this module never reads the environment) or a key file
 *   of 32 random bytes created on first start with mode 0600
 *   (`loadOrCreateKeyFile`).
 * - `generateApiKey`: `sk-` plus base62 of 32 random bytes, unbiased.
 * - Console passwords: scrypt from `node:crypto` (N=2^15, r=8, p=1, 16-byte
 *   salt, 32-byte hash) in a PHC-like string `scrypt$N=32768,r=8,p=1$<salt>$<hash>`,
 *   verified in constant time. scrypt is memory-hard and ships with Node;
 *   argon2id or bcrypt would need a native addon, which this project avoids.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  scrypt,
  timingSafeEqual
} from "node:crypto"
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises"
import { dirname } from "node:path"
import { base62, base62LengthFor } from "./internal/random.ts"

/**
 * Encryption, decryption, key-file and password failures. The message says
 * what failed; it never contains secret material.
 *
 * @category errors
 */
export class SecretError extends Schema.TaggedError<SecretError>()("SecretError", {
  message: Schema.String
}) {}

/**
 * Where the master key comes from.
 *
 * @category models
 */
export type MasterKeySource =
  | { readonly secret: Redacted.Redacted<string> }
  | { readonly keyFile: string }

const SALT = Buffer.from("modelgate")
const ENCRYPTION_LABEL = "modelgate/secrets/aes-256-gcm/v1"
const HASH_LABEL = "modelgate/key-hash/hmac-sha256/v1"

const derive = (master: Uint8Array, label: string): Buffer =>
  Buffer.from(hkdfSync("sha256", master, SALT, Buffer.from(label), 32))

/**
 * Reads the 32-byte master key from `path` (base64 text), creating the file
 * with 32 random bytes and mode 0600 when it does not exist.
 *
 * @category key files
 */
export const loadOrCreateKeyFile = (path: string): Effect.Effect<Uint8Array, SecretError> =>
  Effect.tryPromise({
    try: async () => {
      try {
        const text = (await readFile(path, "utf8")).trim()
        const key = Buffer.from(text, "base64")
        if (key.length !== 32) throw new Error(`expected 32 base64-encoded bytes, found ${key.length}`)
        return new Uint8Array(key)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
      }
      // Only this user may enter a directory the gateway creates for its key (and, beside it, its database).
      await mkdir(dirname(path), { recursive: true, mode: 0o700 })
      const key = randomBytes(32)
      // `wx` fails if another process created the file in the meantime; then read theirs.
      try {
        await writeFile(path, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" })
        await chmod(path, 0o600)
        return new Uint8Array(key)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
        const text = (await readFile(path, "utf8")).trim()
        return new Uint8Array(Buffer.from(text, "base64"))
      }
    },
    catch: (cause) =>
      new SecretError({
        message: `Cannot use the key file '${path}': ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

/** The fewest characters a server secret may have. @category secrets */
export const SECRET_MIN_LENGTH = 16

/** The fewest different characters a server secret may have (`aaaaaaaaaaaaaaaa` has one). @category secrets */
export const SECRET_MIN_DISTINCT = 8

/**
 * Why a server secret is too weak to key the hashes of API keys and the
 * encryption of upstream keys, or `undefined` when it is acceptable: at least
 * {@link SECRET_MIN_LENGTH} characters, of which at least
 * {@link SECRET_MIN_DISTINCT} different (a repeated character or a short
 * repeated word is refused). The message states the rule and how to make a
 * good secret; it never contains the secret.
 *
 * @category secrets
 */
export const weakSecret = (secret: string): string | undefined => {
  const length = [...secret].length
  const distinct = new Set(secret).size
  if (length >= SECRET_MIN_LENGTH && distinct >= SECRET_MIN_DISTINCT) return undefined
  const found = length < SECRET_MIN_LENGTH ? `it has ${length}` : `it has only ${distinct} different`
  return `too weak: a server secret needs at least ${SECRET_MIN_LENGTH} characters, at least ${SECRET_MIN_DISTINCT} of them ` +
    `different (${found}). Generate one with: openssl rand -base64 32`
}

const masterKey = (source: MasterKeySource): Effect.Effect<Uint8Array, SecretError> => {
  if ("keyFile" in source) return loadOrCreateKeyFile(source.keyFile)
  const secret = Redacted.value(source.secret)
  const weak = weakSecret(secret)
  if (weak !== undefined) return Effect.fail(new SecretError({ message: `MODELGATE_SECRET is ${weak}` }))
  return Effect.succeed(new Uint8Array(Buffer.from(secret, "utf8")))
}

/**
 * Builds the encrypt/decrypt pair for a 32-byte AES key.
 *
 * @category constructors
 */
export const makeCipher = (key: Uint8Array): Secrets["Service"] => {
  const encrypt = (plain: string): string => {
    const iv = randomBytes(12)
    const cipher = createCipheriv("aes-256-gcm", key, iv)
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()])
    return `v1:${iv.toString("base64")}:${body.toString("base64")}`
  }
  const decrypt = (blob: string): Effect.Effect<string, SecretError> => {
    const parts = blob.split(":")
    if (parts.length !== 3 || parts[0] !== "v1") {
      return Effect.fail(
        new SecretError({ message: "The encrypted value is not in the 'v1:<iv>:<ciphertext>' format." })
      )
    }
    try {
      const iv = Buffer.from(parts[1]!, "base64")
      const body = Buffer.from(parts[2]!, "base64")
      if (iv.length !== 12 || body.length < 16) throw new Error("truncated")
      const decipher = createDecipheriv("aes-256-gcm", key, iv)
      decipher.setAuthTag(body.subarray(body.length - 16))
      const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()])
      return Effect.succeed(plain.toString("utf8"))
    } catch {
      return Effect.fail(
        new SecretError({
          message: "Cannot decrypt a stored secret: it was encrypted under a different server key " +
            "(MODELGATE_SECRET or key file changed) or it is corrupted."
        })
      )
    }
  }
  return { encrypt: (plain) => Effect.sync(() => encrypt(plain)), decrypt }
}

/**
 * Encryption of upstream API keys at rest.
 *
 * @category services
 */
export class Secrets extends Context.Service<Secrets, {
  /** Encrypts with a fresh random IV: `v1:<iv b64>:<ciphertext+tag b64>`. */
  readonly encrypt: (plain: string) => Effect.Effect<string>
  /** Decrypts a blob made by `encrypt` under the same key; a wrong key or a tampered blob fails. */
  readonly decrypt: (blob: string) => Effect.Effect<string, SecretError>
}>()("modelgate/store/Secrets") {}

/**
 * Keyed hashing of API-key secrets and redemption codes.
 *
 * @category services
 */
export class KeyHasher extends Context.Service<KeyHasher, {
  /** HMAC-SHA256 of the secret, lowercase hex. Pure and fast: safe on the hot path. */
  readonly hash: (secret: string) => string
}>()("modelgate/store/KeyHasher") {}

/**
 * Builds the HMAC hasher for a key.
 *
 * @category constructors
 */
export const makeHasher = (key: Uint8Array): KeyHasher["Service"] => {
  // One key object for every hash: importing the raw key per call cost as much as the HMAC.
  const keyObject = createSecretKey(key)
  return { hash: (secret) => createHmac("sha256", keyObject).update(secret, "utf8").digest("hex") }
}

/**
 * `Secrets` and `KeyHasher` from one master key, each under its own HKDF label.
 *
 * @category layers
 */
export const layer = (source: MasterKeySource): Layer.Layer<Secrets | KeyHasher, SecretError> =>
  Layer.effectContext(
    Effect.map(masterKey(source), (master) =>
      Context.make(Secrets, makeCipher(derive(master, ENCRYPTION_LABEL))).pipe(
        Context.add(KeyHasher, makeHasher(derive(master, HASH_LABEL)))
      ))
  )

/**
 * A new API key: the secret (shown to its owner once) and its display prefix.
 *
 * @category models
 */
export interface GeneratedKey {
  readonly secret: string
  /** The first 10 characters: `sk-` and 7 more. */
  readonly prefix: string
}

/**
 * `sk-` followed by the base62 encoding of 32 random bytes (43 characters,
 * unbiased by rejection sampling).
 *
 * @category api keys
 */
export const generateApiKey = (): GeneratedKey => {
  const secret = `sk-${base62(base62LengthFor(32))}`
  return { secret, prefix: keyPrefix(secret) }
}

/**
 * The displayable prefix of a key secret (its first 10 characters).
 *
 * @category api keys
 */
export const keyPrefix = (secret: string): string => secret.slice(0, 10)

const SCRYPT = { N: 32768, r: 8, p: 1 } as const
const SCRYPT_KEYLEN = 32

const scryptAsync = (password: string, salt: Buffer, params: { N: number; r: number; p: number }, keylen: number) =>
  new Promise<Buffer>((resolve, reject) =>
    // scrypt needs 128 * N * r bytes; allow twice that.
    scrypt(password, salt, keylen, { ...params, maxmem: 2 * 128 * params.N * params.r + 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key))
  )

/**
 * Hashes a console password: `scrypt$N=32768,r=8,p=1$<salt b64>$<hash b64>`.
 *
 * @category passwords
 */
export const hashPassword = (password: Redacted.Redacted<string>): Effect.Effect<string, SecretError> =>
  Effect.tryPromise({
    try: async () => {
      const salt = randomBytes(16)
      const key = await scryptAsync(Redacted.value(password), salt, SCRYPT, SCRYPT_KEYLEN)
      return `scrypt$N=${SCRYPT.N},r=${SCRYPT.r},p=${SCRYPT.p}$${salt.toString("base64")}$${key.toString("base64")}`
    },
    catch: (cause) => new SecretError({ message: `Cannot hash the password: ${String(cause)}` })
  })

/**
 * A hash in `hashPassword`'s format that no password matches (its salt and
 * hash are zeros), with the same scrypt parameters: checking a password
 * against it costs what checking a real one does.
 *
 * @category passwords
 */
export const unmatchableHash = `scrypt$N=${SCRYPT.N},r=${SCRYPT.r},p=${SCRYPT.p}$${
  Buffer.alloc(16).toString("base64")
}$${Buffer.alloc(SCRYPT_KEYLEN).toString("base64")}`

/**
 * Checks a password against a stored hash, or, when there is none (no such
 * user, or a user without a password), against `unmatchableHash` and answers
 * false: either way one scrypt runs, so the time taken does not tell which
 * user names exist. `verify` is `verifyPassword` (replaceable in tests).
 *
 * @category passwords
 */
export const verifyPasswordOrDecoy = (
  password: Redacted.Redacted<string>,
  encoded: string | null | undefined,
  verify: (password: Redacted.Redacted<string>, encoded: string) => Effect.Effect<boolean, SecretError> = verifyPassword
): Effect.Effect<boolean, SecretError> =>
  typeof encoded === "string" ? verify(password, encoded) : Effect.as(verify(password, unmatchableHash), false)

const phcPattern = /^scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/

/**
 * Checks a password against a hash made by `hashPassword`, in constant time.
 * A malformed hash is a failure, not a mismatch.
 *
 * @category passwords
 */
export const verifyPassword = (
  password: Redacted.Redacted<string>,
  encoded: string
): Effect.Effect<boolean, SecretError> => {
  const match = phcPattern.exec(encoded)
  if (match === null) {
    return Effect.fail(
      new SecretError({ message: "The stored password hash is not in the 'scrypt$N=..,r=..,p=..$salt$hash' format." })
    )
  }
  const params = { N: Number(match[1]), r: Number(match[2]), p: Number(match[3]) }
  const salt = Buffer.from(match[4]!, "base64")
  const expected = Buffer.from(match[5]!, "base64")
  if (params.N > 1 << 20 || params.r > 32 || params.p > 16 || expected.length < 16) {
    return Effect.fail(new SecretError({ message: "The stored password hash has out-of-range scrypt parameters." }))
  }
  return Effect.tryPromise({
    try: async () =>
      timingSafeEqual(await scryptAsync(Redacted.value(password), salt, params, expected.length), expected),
    catch: (cause) => new SecretError({ message: `Cannot verify the password: ${String(cause)}` })
  })
}

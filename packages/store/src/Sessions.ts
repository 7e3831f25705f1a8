/**
 * Console sessions, in the `sessions` table. The browser holds a
 * random 256-bit token (the management API puts it in a cookie); the table
 * holds only its SHA-256, so a leaked database does not sign anyone in. Each
 * session has its own CSRF token, which the management API hands out at
 * sign-in and requires on every state-changing request.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { createHash } from "node:crypto"
import * as Row from "./internal/row.ts"

/** How long a session lasts by default: 7 days. @category constants */
export const DEFAULT_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** A live session. @category models */
export interface Session {
  readonly userId: string
  readonly csrfToken: string
  readonly expiresAt: number
}

/** A session just created: its cookie token (never stored) and its record. @category models */
export interface Created extends Session {
  readonly token: string
}

const randomToken = (bytes: number): string => {
  const buffer = new Uint8Array(bytes)
  crypto.getRandomValues(buffer)
  return Buffer.from(buffer).toString("base64url")
}

const digest = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex")

/**
 * The sessions repository.
 *
 * @category services
 */
export class Sessions extends Context.Service<Sessions, {
  /** Opens a session for the user. */
  readonly create: (userId: string) => Effect.Effect<Created, SqlError.SqlError>
  /** The live session of a cookie token, or `undefined` (unknown or expired). */
  readonly find: (token: string) => Effect.Effect<Session | undefined, SqlError.SqlError>
  /** Ends one session. */
  readonly remove: (token: string) => Effect.Effect<void, SqlError.SqlError>
  /** Ends all of a user's sessions except, optionally, the one with this token. */
  readonly removeAllOf: (userId: string, except?: string) => Effect.Effect<void, SqlError.SqlError>
}>()("modelgate/store/Sessions") {
  /**
   * Sessions in SQL, lasting `ttlMs` (default 7 days). Expired rows are
   * deleted whenever a session is created.
   *
   * @category layers
   */
  static readonly layer = (ttlMs: number = DEFAULT_TTL_MS): Layer.Layer<Sessions, never, SqlClient.SqlClient> =>
    Layer.effect(
      Sessions,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return Sessions.of({
          create: Effect.fn("Sessions.create")(function*(userId: string) {
            const now = yield* Clock.currentTimeMillis
            const token = randomToken(32)
            const csrfToken = randomToken(24)
            const expiresAt = now + ttlMs
            yield* sql`DELETE FROM sessions WHERE expires_at <= ${now}`
            yield* sql`INSERT INTO sessions ${
              sql.insert({
                id_hash: digest(token),
                user_id: userId,
                csrf_token: csrfToken,
                created_at: now,
                expires_at: expiresAt
              })
            }`
            return { token, userId, csrfToken, expiresAt }
          }),
          find: Effect.fnUntraced(function*(token: string) {
            const now = yield* Clock.currentTimeMillis
            const rows = yield* sql`SELECT user_id, csrf_token, expires_at FROM sessions WHERE id_hash = ${
              digest(token)
            }`
            const row = rows[0]
            if (row === undefined) return undefined
            const expiresAt = Row.int(row.expires_at, "sessions.expires_at")
            if (expiresAt <= now) return undefined
            return {
              userId: Row.str(row.user_id, "sessions.user_id"),
              csrfToken: Row.str(row.csrf_token, "sessions.csrf_token"),
              expiresAt
            }
          }),
          remove: (token) => Effect.asVoid(sql`DELETE FROM sessions WHERE id_hash = ${digest(token)}`),
          removeAllOf: (userId, except) =>
            Effect.asVoid(
              except === undefined
                ? sql`DELETE FROM sessions WHERE user_id = ${userId}`
                : sql`DELETE FROM sessions WHERE user_id = ${userId} AND id_hash <> ${digest(except)}`
            )
        })
      })
    )
}

/**
 * What every dialect's inspection of a client's body shares: the size up to
 * which a body is parsed and checked whole (`EAGER_CHECK_BYTES`), the scan
 * that reads a larger one without parsing it (`scan`, counting the media
 * parts it passes), a top-level field read on its own (`Scanned.field`), and
 * the structure check a large body skipped, run when the upstream refuses it
 * (`checkKept`). Each dialect says only what differs: its fields, its media
 * part types and its words.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type * as Domain from "../domain/Domain.ts"
import type { InvalidRequest } from "../errors/GatewayError.ts"
import * as Issues from "../errors/Issues.ts"
import * as JsonScan from "../wire/JsonScan.ts"
import * as Tokens from "./Tokens.ts"

/**
 * Bodies up to this size are parsed and their whole structure checked at
 * once; larger ones (what coding agents send: 100 KB and more of history) are
 * only scanned for the fields the call needs, forwarded as they are, and
 * checked if the upstream refuses them (`checkKept`), so a call costs the
 * same whatever the length of its history.
 *
 * @category inspection
 */
export const EAGER_CHECK_BYTES = 16 * 1024

/**
 * What `Scanned.field` answers for a top-level value that JSON refuses though
 * the scan let it through.
 *
 * @category inspection
 */
export const invalid: unique symbol = Symbol("modelgate/Inspection/invalid")

/**
 * The refusal of a body that is JSON but not an object, in the dialect's
 * words (`message`); a body that is not JSON at all is refused with the
 * parser's message (`Issues.notJson`).
 *
 * @category inspection
 */
export const notAnObject = (message: string) => (bytes: Uint8Array): InvalidRequest => {
  try {
    JSON.parse(JsonScan.decode(bytes))
  } catch {
    return Issues.notJson(bytes)
  }
  return Issues.invalid("", message)
}

/**
 * A string visitor (`JsonScan.StringVisitor`) that counts each
 * `"type": "<t>"` pair whose `<t>` names a media part (`types`, with its
 * kind).
 *
 * @category inspection
 */
export const mediaTypeVisitor = (
  types: ReadonlyArray<readonly [string, Domain.MediaKind]>,
  count: (kind: Domain.MediaKind) => void
): JsonScan.StringVisitor =>
(bytes, start, end) => {
  if (!JsonScan.stringIs(bytes, start, end, "type")) return
  const value = JsonScan.stringValueAfter(bytes, end)
  if (value === undefined) return
  for (const [type, kind] of types) {
    if (JsonScan.stringIs(bytes, value.start, value.end, type)) return count(kind)
  }
}

/**
 * A body as `scan` read it.
 *
 * @category inspection
 */
export interface Scanned extends JsonScan.ScannedBody {
  readonly bytes: Uint8Array
  /** Whether the body is small enough to have been parsed, and to be checked, whole. */
  readonly eager: boolean
  /** A top-level value, parsed on its own: `undefined` when absent, `invalid` when it is not JSON. */
  readonly field: (key: string) => unknown
  /** The media parts the scan met in a large body, by kind (empty for an eager one). */
  readonly media: Tokens.MediaCounts
  /** How many media parts the scan met in a large body (0 for an eager one). */
  readonly mediaParts: number
}

/**
 * Scans a client's body (`JsonScan.scanBody`): a body up to
 * `EAGER_CHECK_BYTES` is parsed whole at once; in a larger one the media
 * parts are counted as the scan passes the strings of the `media.in`
 * top-level fields (`"type": "<t>"` pairs, see `mediaTypeVisitor`). A body
 * that is not an object is refused in the dialect's words (`notObject`).
 *
 * @category inspection
 */
export const scan = (body: string | Uint8Array, options: {
  readonly notObject: string
  readonly media: {
    readonly in: ReadonlyArray<string>
    readonly types: ReadonlyArray<readonly [string, Domain.MediaKind]>
  }
}): Result.Result<Scanned, InvalidRequest> => {
  const bytes = typeof body === "string" ? JsonScan.encode(body) : body
  const eager = bytes.length <= EAGER_CHECK_BYTES
  const media: Tokens.MediaCounts = {}
  let mediaParts = 0
  let visit: Record<string, JsonScan.StringVisitor> | undefined
  if (!eager) {
    const visitor = mediaTypeVisitor(options.media.types, (kind) => {
      mediaParts++
      Tokens.countMedia(media, kind)
    })
    visit = {}
    for (const key of options.media.in) visit[key] = visitor
  }
  const scanned = JsonScan.scanBody(bytes, { eager, notObject: notAnObject(options.notObject), visit })
  if (Result.isFailure(scanned)) return Result.fail(scanned.failure)
  const { fields, json } = scanned.success
  return Result.succeed({
    bytes,
    fields,
    json,
    eager,
    media,
    mediaParts,
    field: (key) => {
      try {
        return JsonScan.valueOf(bytes, fields.get(key))
      } catch {
        return invalid
      }
    }
  })
}

/**
 * The structure check a large body skipped at inspection, for when the
 * upstream refused it: `undefined` for a body checked at inspection, the
 * parser's message for JSON the scan let through, else what `check` finds
 * (`undefined` when the body is well formed: the upstream's own refusal then
 * stands).
 *
 * @category inspection
 */
export const checkKept = (
  inspected: JsonScan.KeptBody & { readonly checked: boolean },
  check: (json: Record<string, unknown>) => InvalidRequest | undefined
): InvalidRequest | undefined => {
  if (inspected.checked) return undefined
  const json = JsonScan.parseKept(inspected)
  return Result.isFailure(json) ? json.failure : check(json.success)
}

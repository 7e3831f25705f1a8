/**
 * The subjects of a call: who its rate limits apply to, built from the key,
 * its user and its group.
 *
 * - The key's effective limits: for each of `rpm`, `tpm` and `concurrency`, the
 *   key's own value where set, else its group's. A key may only be set lower
 *   than its group: where both are set, the smaller wins.
 * - The user's limits are a second subject, shared by all the user's keys.
 * - Per model (optional): when `model` is given, both subjects are counted
 *   separately for each model (`key:k1:model:gpt-4o`), as providers do.
 * - A subject with no limit at all is left out (it costs nothing to check).
 *
 * The input is explicit ({@link CallLimits}) because core's `Domain.ApiKey`
 * carries neither the key's nor the user's limits; the store's key record and
 * the user record do, and node-http feeds them here.
 *
 * @since 0.1.0
 */
import type * as Domain from "../domain/Domain.ts"
import type * as RateLimiter from "./RateLimiter.ts"
import * as Window from "./RateWindow.ts"

/**
 * What the subjects of a call are built from.
 *
 * @category models
 */
export interface CallLimits {
  readonly keyId: string
  /** The key's name as its owner chose it, e.g. "laptop". */
  readonly keyName: string
  /** The key's own limits (`null` fields fall back to the group's). */
  readonly keyLimits: Domain.Limits
  readonly userId: string
  readonly userName: string
  readonly userLimits: Domain.Limits
  /** The limits of the key's group: the default for its members' keys. */
  readonly groupLimits: Domain.Limits
  /** Count the limits per model: the public model name of the call. */
  readonly model?: string | undefined
}

const lower = (own: number | null, fallback: number | null): number | null =>
  own === null ? fallback : fallback === null ? own : Math.min(own, fallback)

/**
 * A key's effective limits: its own where set, else its group's; the smaller
 * of the two where both are set (a key may only be lower than its group).
 *
 * @category constructors
 */
export const effectiveKeyLimits = (keyLimits: Domain.Limits, groupLimits: Domain.Limits): Domain.Limits => ({
  rpm: lower(keyLimits.rpm, groupLimits.rpm),
  tpm: lower(keyLimits.tpm, groupLimits.tpm),
  concurrency: lower(keyLimits.concurrency, groupLimits.concurrency)
})

/** The human label of a key in messages: "your API key 'laptop'". @category labels */
export const keyLabel = (keyName: string): string => `your API key '${keyName}'`

/** The human label of a user in messages: "user 'alice'". @category labels */
export const userLabel = (userName: string): string => `user '${userName}'`

/** The subject id of a key: `key:<id>`, or `key:<id>:model:<model>` per model. @category ids */
export const keySubjectId = (keyId: string, model?: string | undefined): string =>
  model === undefined ? `key:${keyId}` : `key:${keyId}:model:${model}`

/** The subject id of a user: `user:<id>`, or `user:<id>:model:<model>` per model. @category ids */
export const userSubjectId = (userId: string, model?: string | undefined): string =>
  model === undefined ? `user:${userId}` : `user:${userId}:model:${model}`

/**
 * The subjects of a call, key first then user, leaving out those without any
 * limit.
 *
 * @example
 * ```ts
 * import { LimitSubjects } from "@modelgate/core"
 *
 * LimitSubjects.forCall({
 *   keyId: "key_1", keyName: "laptop", keyLimits: { rpm: 10, tpm: null, concurrency: null },
 *   userId: "usr_1", userName: "alice", userLimits: { rpm: null, tpm: 100000, concurrency: null },
 *   groupLimits: { rpm: 60, tpm: 40000, concurrency: 4 }
 * })
 * // [ { id: "key:key_1", label: "your API key 'laptop'", limits: { rpm: 10, tpm: 40000, concurrency: 4 } },
 * //   { id: "user:usr_1", label: "user 'alice'", limits: { rpm: null, tpm: 100000, concurrency: null } } ]
 * ```
 *
 * @category constructors
 */
export const forCall = (input: CallLimits): ReadonlyArray<RateLimiter.Subject> => {
  const subjects: Array<RateLimiter.Subject> = []
  const model = input.model
  const suffix = model === undefined ? "" : ` on model '${model}'`
  const keyLimits = effectiveKeyLimits(input.keyLimits, input.groupLimits)
  if (Window.isLimited(keyLimits)) {
    subjects.push({ id: keySubjectId(input.keyId, model), label: keyLabel(input.keyName) + suffix, limits: keyLimits })
  }
  if (Window.isLimited(input.userLimits)) {
    subjects.push({
      id: userSubjectId(input.userId, model),
      label: userLabel(input.userName) + suffix,
      limits: input.userLimits
    })
  }
  return subjects
}

/**
 * Errors of the store's own operations (management and provisioning). The
 * client-facing vocabulary stays in core's `GatewayError`; the store reuses its
 * `ResourceNotFound` and `InsufficientBalance` where they fit.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * Input that cannot be stored; `path` names the offending field (`users[2].name`,
 * `amountNanos`).
 *
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * A record with the same natural key (user name, channel name, key name of a
 * user, ...) already exists.
 *
 * @category errors
 */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {}

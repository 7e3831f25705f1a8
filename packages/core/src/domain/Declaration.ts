/**
 * What a configuration declares, as plain data: users with their keys and
 * balances, groups, models, aliases and channels. Money is in nano-dollar
 * bigints, ratios in micros, times in epoch milliseconds. node-http maps its
 * YAML file to this and the store provisions it; an embedded gateway
 * (`@modelgate/engine`'s web handler) serves it from memory.
 *
 * @since 0.1.0
 */
import type { Redacted } from "effect"
import type { Alias, Channel, Limits, Model, Role } from "./Domain.ts"

/** A user. @category models */
export interface User {
  readonly name: string
  /** Default `user`. */
  readonly role?: Role | undefined
  /** Default `true`. */
  readonly enabled?: boolean | undefined
  /** Initial balance in nano-dollars, credited once at creation. Default 0. */
  readonly balanceNanos?: bigint | undefined
  /** Console password; omitted means the stored one (if any) is kept. */
  readonly password?: Redacted.Redacted<string> | undefined
  /** Groups the user may pick for their keys (provisioned: replaces the stored list when given). */
  readonly groups?: ReadonlyArray<string> | undefined
  /** Rate limits shared by all the user's keys; an unset field means no limit. */
  readonly limits?: Partial<Limits> | undefined
}

/** A group. @category models */
export interface Group {
  readonly name: string
  /** Price ratio in millionths (1.0 = 1000000). */
  readonly ratioMicros: bigint
  readonly limits?: Partial<Limits> | undefined
  /** Whether users may pick the group for their own keys. Default `false`. */
  readonly selectable?: boolean | undefined
}

/** An API key. @category models */
export interface Key {
  /** The owner's user name. */
  readonly user: string
  readonly name: string
  readonly group: string
  /** A fixed secret (`sk-...`); without it one is generated at creation (and shown once). */
  readonly secret?: Redacted.Redacted<string> | undefined
  readonly models?: ReadonlyArray<string> | undefined
  readonly expiresAt?: number | null | undefined
  readonly enabled?: boolean | undefined
  readonly quotaNanos?: bigint | null | undefined
  readonly dailyBudgetNanos?: bigint | null | undefined
  readonly monthlyBudgetNanos?: bigint | null | undefined
  readonly limits?: Partial<Limits> | undefined
}

/** Everything declared. Every list is optional. @category models */
export interface Declaration {
  readonly users?: ReadonlyArray<User> | undefined
  readonly groups?: ReadonlyArray<Group> | undefined
  readonly models?: ReadonlyArray<Model> | undefined
  /** In matching order. */
  readonly aliases?: ReadonlyArray<Alias> | undefined
  /** Channels by name; `apiKeys` in plain text. */
  readonly channels?: ReadonlyArray<Omit<Channel, "id">> | undefined
  readonly keys?: ReadonlyArray<Key> | undefined
}

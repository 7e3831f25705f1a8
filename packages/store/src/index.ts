/**
 * `@modelgate/store`: persistence behind core's ports, on SQLite (embedded
 * default, via `node:sqlite`) and PostgreSQL (via `@effect/sql-pg`).
 *
 * @since 0.1.0
 */
export * as Accounts from "./Accounts.ts"
export * as CacheChanges from "./CacheChanges.ts"
export * as Caches from "./Caches.ts"
export * as CatalogRepo from "./CatalogRepo.ts"
export * as ChannelKeyStates from "./ChannelKeyStates.ts"
export * as Database from "./Database.ts"
export * as Keys from "./Keys.ts"
export * as Migrations from "./Migrations.ts"
export * as Provisioning from "./Provisioning.ts"
export * as Purses from "./Purses.ts"
export * as Redemption from "./Redemption.ts"
export * as Reports from "./Reports.ts"
export * as Secrets from "./Secrets.ts"
export * as Sessions from "./Sessions.ts"
export * as SqliteClient from "./SqliteClient.ts"
export * as Store from "./Store.ts"
export * as StoreError from "./StoreError.ts"
export * as UsageJournal from "./UsageJournal.ts"
export * as UsageRetention from "./UsageRetention.ts"
export * as UsageWriter from "./UsageWriter.ts"
export * as Users from "./Users.ts"

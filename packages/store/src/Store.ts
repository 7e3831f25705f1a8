/**
 * The whole store in one layer: the database chosen by URL, migrations run at
 * build time, secrets, every repository, and core's ports (`Accounts`,
 * `KeyStore`, `UsageLog`) backed by them (`Accounts` by `Purses`: balance leases). At build it also releases the holds
 * this node left behind before a crash (`sweepHolds({ nodeId })`).
 *
 * @since 0.1.0
 */
import type { Accounts as AccountsPort, KeyStore, UsageLog } from "@modelgate/core"
import { Effect, Layer } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { Accounts } from "./Accounts.ts"
import { CatalogRepo } from "./CatalogRepo.ts"
import { ChannelKeyStates } from "./ChannelKeyStates.ts"
import * as Database from "./Database.ts"
import { Keys } from "./Keys.ts"
import { migrate } from "./Migrations.ts"
import { Provisioning } from "./Provisioning.ts"
import * as Purses from "./Purses.ts"
import { Redemption } from "./Redemption.ts"
import { Reports } from "./Reports.ts"
import * as Secrets from "./Secrets.ts"
import { Sessions } from "./Sessions.ts"
import { UsageWriter, type WriterOptions } from "./UsageWriter.ts"
import { Users } from "./Users.ts"

/**
 * Options of the store.
 *
 * @category models
 */
export interface Options {
  /** `sqlite:PATH`, `sqlite::memory:`, `postgres://...` (see `Database`). */
  readonly url: string
  /** Where the master key comes from (`MODELGATE_SECRET` or a key file). */
  readonly masterKey: Secrets.MasterKeySource
  /** This process's id, stamped on its balance holds. */
  readonly nodeId: string
  readonly maxConnections?: number | undefined
  readonly usage?: WriterOptions | undefined
}

/**
 * Everything the store provides.
 *
 * @category models
 */
export type Services =
  | SqlClient.SqlClient
  | Database.Dialect
  | Secrets.Secrets
  | Secrets.KeyHasher
  | Users
  | Keys
  | Accounts
  | CatalogRepo
  | ChannelKeyStates
  | Provisioning
  | Redemption
  | Reports
  | Sessions
  | UsageWriter
  | AccountsPort.Accounts
  | KeyStore.KeyStore
  | UsageLog.UsageLog

/**
 * Builds the store: connects, migrates, sweeps this node's orphaned holds.
 *
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<Services, Database.InvalidDatabaseUrl | SqlError.SqlError | Secrets.SecretError> => {
  const database = Layer.effectDiscard(migrate).pipe(
    Layer.provideMerge(Database.layer(options.url, { maxConnections: options.maxConnections }))
  )
  const base = Layer.merge(database, Secrets.layer(options.masterKey))
  const repositories = Layer.mergeAll(
    Users.layer,
    Keys.layer,
    Accounts.layer,
    CatalogRepo.layer,
    ChannelKeyStates.layer,
    Provisioning.layer,
    Redemption.layer,
    Reports.layer,
    Sessions.layer(),
    UsageWriter.layerWith(options.usage)
  ).pipe(Layer.provideMerge(base))
  const ports = Layer.mergeAll(
    Purses.layer({ nodeId: options.nodeId }),
    Keys.layerKeyStore,
    UsageWriter.layerPort,
    Layer.effectDiscard(Effect.flatMap(Accounts, (accounts) => accounts.sweepHolds({ nodeId: options.nodeId })))
  ).pipe(Layer.provideMerge(repositories))
  return ports
}

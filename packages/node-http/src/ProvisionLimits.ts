/**
 * Users' rate limits from the configuration file (`users[].rpm`, `tpm`,
 * `concurrency`) into provisioning. `Provision.toInput` maps keys' and groups'
 * limits but not users', so the server runs `Provision.apply` through
 * {@link withUserLimits}, which adds each declared user's limits to the input
 * (matched by name) before the store applies it. A user that declares none
 * gets none (config-made users follow the file, like their other fields).
 *
 * @since 0.1.0
 */
import * as Provisioning from "@modelgate/store/Provisioning"
import { Effect } from "effect"
import type { ConfigFile } from "./ConfigFile.ts"

/**
 * The input with every declared user's limits filled in from the file.
 *
 * @category mapping
 */
export const addUserLimits = (input: Provisioning.ProvisionInput, file: ConfigFile): Provisioning.ProvisionInput => {
  const declared = new Map((file.users ?? []).map((user) => [user.name, user]))
  return {
    ...input,
    users: input.users?.map((user): Provisioning.ProvisionUser => {
      const config = declared.get(user.name)
      return config === undefined || user.limits !== undefined ? user : {
        ...user,
        limits: { rpm: config.rpm ?? null, tpm: config.tpm ?? null, concurrency: config.concurrency ?? null }
      }
    })
  }
}

/**
 * Runs `effect` (a provisioning run) with a provisioning service that adds the
 * users' limits from `file` to every input.
 *
 * @category applying
 */
export const withUserLimits = (file: ConfigFile) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Provisioning.Provisioning> =>
  Effect.updateService(effect, Provisioning.Provisioning, (provisioning) =>
    Provisioning.Provisioning.of({ provision: (input) => provisioning.provision(addUserLimits(input, file)) }))

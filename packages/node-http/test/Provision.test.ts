/**
 * The configuration file's users, keys and groups carry their rate limits into
 * the provisioning input (a user's limits apply to all the user's keys).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Provision from "../src/Provision.ts"

describe("Provision.toInput", () => {
  it.effect("maps the limits of users, keys and groups; fields left out mean no limit", () =>
    Effect.gen(function*() {
      const input = yield* Provision.toInput({
        groups: { slow: { rpm: 30, concurrency: 2 } },
        users: [
          { name: "carol", rpm: 2, tpm: 1000, keys: [{ name: "k", group: "slow", tpm: 500 }] },
          { name: "dave", concurrency: 3 },
          { name: "erin" }
        ]
      }, "test")
      assert.deepStrictEqual(input.users?.map((user) => [user.name, user.limits]), [
        ["carol", { rpm: 2, tpm: 1000 }],
        ["dave", { concurrency: 3 }],
        ["erin", {}]
      ])
      assert.deepStrictEqual(input.keys?.[0]?.limits, { tpm: 500 })
      assert.deepStrictEqual(input.groups?.find((group) => group.name === "slow")?.limits, { rpm: 30, concurrency: 2 })
    }))
})

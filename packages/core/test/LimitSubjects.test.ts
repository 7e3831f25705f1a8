import { assert, describe, it } from "@effect/vitest"
import { effectiveKeyLimits, forCall } from "../src/admission/LimitSubjects.ts"

const none = { rpm: null, tpm: null, concurrency: null }

describe("Subjects", () => {
  it("a key takes its group's limits where it has none, and may only be lower", () => {
    assert.deepStrictEqual(
      effectiveKeyLimits({ rpm: 10, tpm: null, concurrency: 8 }, { rpm: 60, tpm: 40_000, concurrency: 4 }),
      { rpm: 10, tpm: 40_000, concurrency: 4 }
    )
    assert.deepStrictEqual(effectiveKeyLimits({ rpm: 5, tpm: null, concurrency: null }, none), {
      rpm: 5,
      tpm: null,
      concurrency: null
    })
    assert.deepStrictEqual(effectiveKeyLimits(none, none), none)
  })

  it("builds the key and user subjects with labels for messages", () => {
    const subjects = forCall({
      keyId: "key_1",
      keyName: "laptop",
      keyLimits: { rpm: 10, tpm: null, concurrency: null },
      userId: "usr_1",
      userName: "alice",
      userLimits: { rpm: null, tpm: 100_000, concurrency: null },
      groupLimits: { rpm: 60, tpm: 40_000, concurrency: 4 }
    })
    assert.deepStrictEqual(subjects, [
      { id: "key:key_1", label: "your API key 'laptop'", limits: { rpm: 10, tpm: 40_000, concurrency: 4 } },
      { id: "user:usr_1", label: "user 'alice'", limits: { rpm: null, tpm: 100_000, concurrency: null } }
    ])
  })

  it("counts per model when a model is given", () => {
    const subjects = forCall({
      keyId: "key_1",
      keyName: "laptop",
      keyLimits: none,
      userId: "usr_1",
      userName: "alice",
      userLimits: { rpm: 100, tpm: null, concurrency: null },
      groupLimits: { rpm: 60, tpm: null, concurrency: null },
      model: "gpt-4o"
    })
    assert.deepStrictEqual(subjects.map((s) => [s.id, s.label]), [
      ["key:key_1:model:gpt-4o", "your API key 'laptop' on model 'gpt-4o'"],
      ["user:usr_1:model:gpt-4o", "user 'alice' on model 'gpt-4o'"]
    ])
  })

  it("leaves out subjects without any limit", () => {
    assert.deepStrictEqual(
      forCall({
        keyId: "k",
        keyName: "k",
        keyLimits: none,
        userId: "u",
        userName: "u",
        userLimits: none,
        groupLimits: none
      }),
      []
    )
  })
})

/**
 * Messages in the console's language: every message the shared Schemas give
 * a form has a dictionary entry in both languages, and the server's refusals
 * are worded by their code (English keeps the server's own words).
 */
import { assert, describe, it } from "vitest"
import { ApiFailure } from "../src/lib/api.ts"
import { Contract } from "../src/lib/contract.ts"
import { errorText, schemaMessages } from "../src/lib/errors.ts"
import { problemText, validate } from "../src/lib/forms.ts"
import { dictionaries, interpolate, type MessageKey, type Translate } from "../src/lib/i18n.tsx"

const translator = (language: "en" | "zh"): Translate => (key, values) =>
  interpolate(dictionaries[language][key], values)
const en = translator("en")
const zh = translator("zh")

/** Every form's Schema with values that break each of its checks. */
const broken: ReadonlyArray<
  readonly [string, { readonly "~standard"?: unknown } & Parameters<typeof validate>[0], unknown]
> = [
  ["sign-in", Contract.LoginRequest, { username: "", password: "" }],
  ["change password", Contract.ChangePasswordRequest, { currentPassword: "", newPassword: "short" }],
  ["change password (long)", Contract.ChangePasswordRequest, { currentPassword: "x", newPassword: "x".repeat(300) }],
  ["create key", Contract.CreateKeyRequest, { name: "", quota: "lots" }],
  ["create key (long name)", Contract.CreateKeyRequest, { name: "x".repeat(65) }],
  ["create key (spaces)", Contract.CreateKeyRequest, { name: " laptop " }],
  ["redeem", Contract.RedeemRequest, { code: "" }],
  ["create user", Contract.CreateUserRequest, { name: "-x", password: "short", balance: "-1" }],
  ["adjust balance", Contract.AdjustBalanceRequest, { amount: "0", reason: "" }],
  ["adjust balance (not an amount)", Contract.AdjustBalanceRequest, { amount: "ten", reason: "x".repeat(501) }],
  ["create group", Contract.CreateGroupRequest, {
    name: "a b",
    ratio: "half",
    limits: { rpm: 0, tpm: null, concurrency: null }
  }],
  ["create channel", Contract.CreateChannelRequest, {
    name: "",
    type: "openai",
    baseUrl: "api",
    models: [],
    weight: -1,
    apiKeys: []
  }],
  ["save model", Contract.UpsertModelRequest, {
    id: "bad id!",
    prices: { input: "cheap", output: null, cachedInput: null, perRequest: null, free: false },
    inputTokenLimit: 0,
    outputTokenLimit: Number.NaN
  }],
  ["generate codes", Contract.GenerateCodesRequest, { count: 0, amount: "0" }]
]

describe("form messages", () => {
  it("say in English exactly what the Schemas say", () => {
    for (const [message, key] of Object.entries(schemaMessages)) {
      if (message !== "Missing key") assert.strictEqual(dictionaries.en[key], message, key)
    }
  })

  it("have a Chinese wording for every problem every form can have", () => {
    for (const [form, schema, value] of broken) {
      const result = validate(schema, value)
      assert.isFalse(result.ok, form)
      if (result.ok) continue
      assert.isAbove(Object.keys(result.errors).length, 0, form)
      for (const [field, problem] of Object.entries(result.errors)) {
        const text = problemText(problem, zh)
        assert.notMatch(
          text,
          /格式不正确/,
          `${form}.${field}: '${problem._tag === "schema" ? problem.message : ""}' has no Chinese wording`
        )
        assert.notMatch(
          text.replaceAll(/https?:\/\//g, ""),
          /[A-Za-z]{4,}/,
          `${form}.${field}: '${text}' is not Chinese`
        )
      }
    }
  })
})

describe("server refusals", () => {
  const failure = (
    code: string | null,
    message: string,
    param: string | null = null,
    status = 400,
    retryAfter: number | null = null
  ) => new ApiFailure(status, message, param, code, retryAfter)

  it("keep the server's words in English", () => {
    assert.strictEqual(
      errorText(failure("conflict", "You already have a key named 'desk'.", null, 409), en),
      "You already have a key named 'desk'."
    )
    assert.strictEqual(
      errorText(failure("invalid_credentials", "Wrong user name or password.", null, 401), en),
      "Wrong user name or password."
    )
    assert.strictEqual(errorText(failure("group_gone", "group: no group named 'x'", "group"), en), "no group named 'x'")
  })

  it("are worded by their code in Chinese", () => {
    const cases: ReadonlyArray<readonly [ApiFailure, string]> = [
      [failure("invalid_credentials", "Wrong user name or password.", null, 401), "用户名或密码错误。"],
      [
        failure("rate_limited", "Too many failed sign-in attempts. Try again in 42 seconds.", null, 429, 42),
        "尝试次数过多，请在 42 秒后重试。"
      ],
      [failure("csrf_failed", "Missing or wrong CSRF token.", null, 403), "页面已过期，请刷新后重试。"],
      [failure("admin_only", "This endpoint is for administrators only.", null, 403), "此操作仅限管理员。"],
      [failure("code_unknown", "code: no such code", "code"), "兑换码无效。"],
      [failure("insufficient_balance", "amount: the balance is too low", "amount"), "余额不足。"],
      [failure("internal_error", "The server failed.", null, 500), "服务器处理请求失败，原因已记录在服务器日志中。"],
      [failure(null, "HTTP 502", null, 502), "服务器返回了状态码 502。"],
      [failure("network", "network", null, 0), dictionaries.zh["common.network" satisfies MessageKey]]
    ]
    for (const [error, text] of cases) assert.strictEqual(errorText(error, zh), text, error.code ?? error.message)
  })

  it("translate a refused field by its Schema message, or say the server's words as detail", () => {
    assert.strictEqual(errorText(failure("invalid_request", "name: Required", "name"), zh), "必填")
    assert.strictEqual(
      errorText(failure("conflict", "A user named 'carol' already exists.", null, 409), zh),
      "与已有记录冲突（A user named 'carol' already exists.）"
    )
  })
})

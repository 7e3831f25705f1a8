/**
 * `/metrics` end to end: the real server with a metrics token, the fake
 * upstream, known calls (served, streamed, failed over to nothing, refused by
 * a rate limit, by the balance, for an unknown model), then the exposition
 * read with a Prometheus text parser (`parse-prometheus-text-format`) and its
 * figures checked against the calls and the usage records in the database.
 * Also: the token is required (401 without it), `/metrics` is a 404 when no
 * token is configured, and no label names a user or a key.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { readFileSync } from "node:fs"
import parsePrometheusTextFormat, { type Family } from "parse-prometheus-text-format"
import { type ConfigFile, parse } from "../src/ConfigFile.ts"
import { resolveSettings } from "../src/Settings.ts"
import { runSql } from "./support/Databases.ts"
import { baseConfig, KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

const TOKEN = "metrics-token-0123456789abcdef"
const LIMITED = "sk-test-metrics-limited-000000000000000000"
const POOR = "sk-test-metrics-poor-00000000000000000000000"

const config = (upstream: string): ConfigFile => {
  const base = baseConfig(upstream)
  return {
    ...base,
    metrics: { token: TOKEN },
    users: [
      ...(base.users ?? []),
      { name: "limited", balance: 10, keys: [{ name: "one-a-minute", secret: LIMITED, rpm: 1 }] },
      { name: "poor", balance: 0.000001, keys: [{ name: "empty", secret: POOR }] }
    ]
  }
}

let gateway: TestGateway
let plain: TestGateway

beforeAll(async () => {
  gateway = await startGateway(config)
  plain = await startGateway()
})

afterAll(async () => {
  await gateway?.close()
  await plain?.close()
})

const chat = (key: string, model: string, stream = false) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "Count the metrics" }] })
  })

const scrape = async (authorization = `Bearer ${TOKEN}`) => {
  const response = await fetch(`${gateway.url}/metrics`, { headers: { authorization } })
  assert.strictEqual(response.status, 200)
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
  const text = await response.text()
  return { text, families: parsePrometheusTextFormat(text) }
}

/**
 * A sample of a labelled histogram (`_bucket`, `_sum`, `_count`), read from
 * its line: the parser folds a histogram's label sets into one sample, so it
 * only reads unlabelled histograms whole.
 */
const histogramSample = (text: string, name: string, labels: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `))
  assert.isDefined(line, `${name}{${labels}} is exported`)
  return Number(line!.slice(line!.lastIndexOf(" ") + 1))
}

const family = (families: ReadonlyArray<Family>, name: string): Family => {
  const found = families.find((f) => f.name === name)
  assert.isDefined(found, `${name} is exported`)
  return found!
}

/** The value of the sample of `name` whose labels include `labels` (0 when there is none). */
const value = (families: ReadonlyArray<Family>, name: string, labels: Readonly<Record<string, string>>): number => {
  const sample = family(families, name).metrics.find((m) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)
  )
  return sample === undefined ? 0 : Number(sample.value)
}

describe("/metrics", () => {
  it("is a 404 without a metrics token, and a 401 without the right bearer token", async () => {
    const off = await fetch(`${plain.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    assert.strictEqual(off.status, 404)
    assert.include((await off.json() as { error: { message: string } }).error.message, "metrics are off")
    for (const authorization of [undefined, "Bearer wrong-token-0123456789abcdef", TOKEN, `Bearer ${TOKEN}x`]) {
      const response = await fetch(
        `${gateway.url}/metrics`,
        authorization === undefined ? {} : { headers: { authorization } }
      )
      assert.strictEqual(response.status, 401, String(authorization))
      assert.include(response.headers.get("www-authenticate") ?? "", "Bearer")
    }
  })

  it("counts known calls: requests, attempts, tokens, money, refusals, durations, the writer and the process", async () => {
    const served: Array<{ prompt: number; completion: number }> = []
    for (let i = 0; i < 2; i++) {
      const response = await chat(KEY, "gpt-4o-mini")
      assert.strictEqual(response.status, 200)
      const body = await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } }
      served.push({ prompt: body.usage.prompt_tokens, completion: body.usage.completion_tokens })
    }
    const stream = await chat(KEY, "gpt-4o-mini", true)
    assert.strictEqual(stream.status, 200)
    await stream.text()
    assert.strictEqual((await chat(KEY, "broken-model")).status, 502)
    assert.strictEqual((await chat(KEY, "no-such-model")).status, 404)
    assert.strictEqual((await chat(LIMITED, "gpt-4o-mini")).status, 200)
    assert.strictEqual((await chat(LIMITED, "gpt-4o-mini")).status, 429)
    assert.strictEqual((await chat(POOR, "gpt-4o-mini")).status, 429)

    // Every call's usage record is in the database, refusals included.
    const database = gateway.database
    const records = async () =>
      runSql(
        database,
        (sql) => sql`SELECT model, status, prompt_tokens, completion_tokens, cost_nanos FROM usage_records`
      )
    for (let i = 0; i < 200 && (await records()).length < 8; i++) await new Promise((r) => setTimeout(r, 25))
    const rows = await records()
    assert.strictEqual(rows.length, 8)

    const { text, families: metrics } = await scrape()
    const requests = (labels: Record<string, string>) =>
      value(metrics, "modelgate_requests_total", { dialect: "openai", ...labels })
    assert.strictEqual(requests({ model: "gpt-4o-mini", channel: "fake-openai", status: "200" }), 4)
    assert.strictEqual(requests({ model: "broken-model", channel: "fake-broken", status: "502" }), 1)
    // Refused before any upstream attempt: no channel; a model the catalog does not know is not a label value.
    assert.strictEqual(requests({ model: "unknown", channel: "none", status: "404" }), 1)
    assert.strictEqual(requests({ model: "gpt-4o-mini", channel: "none", status: "429" }), 2)
    assert.isUndefined(
      family(metrics, "modelgate_requests_total").metrics.find((m) => m.labels?.model === "no-such-model")
    )
    assert.strictEqual(value(metrics, "modelgate_rate_limited_total", { subject: "key" }), 1)
    assert.isAtLeast(
      value(metrics, "modelgate_upstream_attempts_total", { channel: "fake-broken", outcome: "unavailable" }),
      1
    )
    assert.strictEqual(
      value(metrics, "modelgate_upstream_attempts_total", { channel: "fake-openai", outcome: "ok" }),
      4
    )

    // Tokens and money agree with the usage records.
    const mini = rows.filter((r) => r.model === "gpt-4o-mini" && Number(r.status) === 200)
    const sum = (column: "prompt_tokens" | "completion_tokens") =>
      mini.reduce((total, r) => total + Number(r[column]), 0)
    assert.strictEqual(
      value(metrics, "modelgate_tokens_total", { model: "gpt-4o-mini", kind: "prompt" }),
      sum("prompt_tokens")
    )
    assert.strictEqual(
      value(metrics, "modelgate_tokens_total", { model: "gpt-4o-mini", kind: "completion" }),
      sum("completion_tokens")
    )
    assert.isAtLeast(sum("prompt_tokens"), served[0]!.prompt + served[1]!.prompt)
    const charged = mini.reduce((total, r) => total + Number(r.cost_nanos), 0) / 1e9
    assert.isAbove(charged, 0)
    assert.closeTo(value(metrics, "modelgate_charged_usd_total", { model: "gpt-4o-mini" }), charged, 1e-12)

    // Durations: one observation per call that reached an upstream.
    assert.strictEqual(family(metrics, "modelgate_request_duration_seconds").type, "HISTOGRAM")
    assert.strictEqual(family(metrics, "modelgate_time_to_first_byte_seconds").type, "HISTOGRAM")
    const nonStream = "model=\"gpt-4o-mini\",stream=\"false\""
    assert.strictEqual(histogramSample(text, "modelgate_request_duration_seconds_count", nonStream), 3)
    assert.strictEqual(histogramSample(text, "modelgate_request_duration_seconds_bucket", `${nonStream},le="+Inf"`), 3)
    assert.isAbove(histogramSample(text, "modelgate_request_duration_seconds_sum", nonStream), 0)
    // Buckets are cumulative.
    assert.isAtMost(
      histogramSample(text, "modelgate_request_duration_seconds_bucket", `${nonStream},le="0.05"`),
      histogramSample(text, "modelgate_request_duration_seconds_bucket", `${nonStream},le="300"`)
    )
    assert.strictEqual(
      histogramSample(text, "modelgate_time_to_first_byte_seconds_count", "model=\"gpt-4o-mini\",stream=\"true\""),
      1
    )
    // The broken model reached its upstream: its failure took time too; the refused calls did not.
    assert.strictEqual(
      histogramSample(text, "modelgate_request_duration_seconds_count", "model=\"broken-model\",stream=\"false\""),
      1
    )
    assert.notInclude(text, "modelgate_request_duration_seconds_count{model=\"unknown\"")

    // The channels' keys, the usage writer, and the process.
    assert.strictEqual(value(metrics, "modelgate_breaker_open", { channel: "fake-openai" }), 0)
    assert.strictEqual(value(metrics, "modelgate_upstream_keys", { channel: "fake-openai", state: "healthy" }), 1)
    assert.strictEqual(value(metrics, "modelgate_upstream_models_refused", { channel: "fake-openai" }), 0)
    assert.strictEqual(family(metrics, "modelgate_usage_queue_depth").type, "GAUGE")
    assert.isAtLeast(Number(family(metrics, "modelgate_usage_flush_seconds").metrics[0]!.count), 1)
    assert.isAbove(Number(family(metrics, "process_cpu_user_seconds_total").metrics[0]!.value), 0)
    assert.isAbove(Number(family(metrics, "nodejs_heap_size_used_bytes").metrics[0]!.value), 0)

    // No label anywhere names a user or a key.
    for (const f of metrics) {
      for (const sample of f.metrics) {
        for (const [name, label] of Object.entries(sample.labels ?? {})) {
          assert.notInclude(["user", "key", "user_id", "key_id", "request_id"], name, `${f.name} has a label ${name}`)
          for (const secret of [KEY, LIMITED, POOR, "alice", "limited", "poor"]) {
            assert.notStrictEqual(label, secret, `${f.name}{${name}}`)
          }
        }
      }
    }
  })
})

describe("the Grafana dashboard in docs/grafana", () => {
  it("asks only for metrics the gateway exports", async () => {
    const dashboard = JSON.parse(
      readFileSync(new URL("../../../docs/grafana/modelgate.json", import.meta.url), "utf8")
    ) as {
      readonly panels: ReadonlyArray<
        { readonly type: string; readonly targets?: ReadonlyArray<{ readonly expr: string }> }
      >
    }
    const expressions = dashboard.panels.flatMap((panel) => panel.targets?.map((target) => target.expr) ?? [])
    assert.isAbove(expressions.length, 15)
    const named = new Set(
      expressions.flatMap((expr) =>
        [...expr.matchAll(/\b((?:modelgate|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!)
      )
    )
    const exported = new Set((await scrape()).families.map((f) => f.name))
    for (const name of named) {
      const family = name.replace(/_(bucket|sum|count)$/, "")
      assert.isTrue(
        exported.has(name) || exported.has(family),
        `the dashboard asks for ${name}, which /metrics does not export`
      )
    }
  })
})

describe("the metrics token", () => {
  it.effect("comes from MODELGATE_METRICS_TOKEN before the file, and a short one is refused", () =>
    Effect.gen(function*() {
      const file: ConfigFile = { metrics: { token: "file-token-0123456789" } }
      const fromFile = yield* resolveSettings(file, {}, { consoleDir: null, source: "test" })
      assert.strictEqual(fromFile.metricsToken === null ? null : String(fromFile.metricsToken), "<redacted>")
      const fromEnv = yield* resolveSettings(file, { MODELGATE_METRICS_TOKEN: "env-token-0123456789abc" }, {
        consoleDir: null,
        source: "test"
      })
      assert.strictEqual(Redacted.value(fromEnv.metricsToken!), "env-token-0123456789abc")
      assert.strictEqual(Redacted.value(fromFile.metricsToken!), "file-token-0123456789")
      const off = yield* resolveSettings({}, { MODELGATE_METRICS_TOKEN: "" }, { consoleDir: null, source: "test" })
      assert.isNull(off.metricsToken)
      const short = yield* Effect.flip(
        resolveSettings({}, { MODELGATE_METRICS_TOKEN: "short" }, { consoleDir: null, source: "test" })
      )
      assert.include(short.message, "at least 16 characters")
      const shortInFile = yield* Effect.flip(parse("metrics:\n  token: short\n", "gateway.yaml"))
      assert.include(shortInFile.message, "at metrics.token")
      assert.include(shortInFile.message, "at least 16 characters")
    }))
})

/**
 * Tracing's settings: the standard OTEL_* variables over the configuration
 * file's `telemetry:` section over the defaults, and a start-up error naming
 * the variable (or the file and field) for every bad value.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { parse, type TelemetryConfig as FileTelemetry } from "../src/config/Config.ts"
import * as TelemetryConfig from "../src/config/TelemetryConfig.ts"

const resolve = (file: FileTelemetry | undefined, env: Record<string, string | undefined>) =>
  Effect.runSync(TelemetryConfig.resolve(file, env, "gateway.yaml"))

const failure = (file: FileTelemetry | undefined, env: Record<string, string | undefined>): string =>
  Effect.runSync(Effect.flip(TelemetryConfig.resolve(file, env, "gateway.yaml"))).message

describe("TelemetryConfig", () => {
  it("is off, with the defaults, when no endpoint is set", () => {
    const settings = resolve(undefined, {})
    assert.isNull(settings.traces)
    assert.match(settings.off!, /no OTLP endpoint/)
    assert.deepStrictEqual(settings.sampler, { name: "parentbased_always_on", ratio: 1 })
    assert.strictEqual(settings.serviceName, "modelgate")
    assert.isFalse(settings.captureContent)
  })

  it("turns on with an endpoint alone, appending /v1/traces to a base endpoint", () => {
    const settings = resolve(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })
    assert.isNull(settings.off)
    assert.deepStrictEqual({ ...settings.traces!, headers: Redacted.value(settings.traces!.headers) }, {
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      headers: {},
      compression: "none",
      timeoutMs: 10_000,
      scheduleDelayMs: 5_000,
      exportTimeoutMs: 30_000,
      maxQueueSize: 2_048,
      maxExportBatchSize: 512
    })
    assert.strictEqual(
      resolve(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example.com/otlp/" }).traces!.url,
      "https://otlp.example.com/otlp/v1/traces"
    )
    assert.strictEqual(
      resolve(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "https://cloud.langfuse.com/api/public/otel" }).traces!.url,
      "https://cloud.langfuse.com/api/public/otel/v1/traces"
    )
  })

  it("uses a traces endpoint as it is, over the base endpoint", () => {
    const settings = resolve(undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom/path"
    })
    assert.strictEqual(settings.traces!.url, "http://traces:9999/custom/path")
  })

  it("takes every setting from the file, and the environment wins over it", () => {
    const file: FileTelemetry = {
      endpoint: "http://file:4318",
      protocol: "http/json",
      headers: { authorization: "Basic file", "x-team": "ops" },
      compression: "gzip",
      timeout_ms: 2_000,
      service_name: "gateway-eu",
      resource_attributes: { "deployment.environment": "prod", region: "eu" },
      sampler: "parentbased_traceidratio",
      sampler_arg: 0.1,
      capture_content: true,
      batch: { schedule_delay_ms: 1_000, export_timeout_ms: 5_000, max_queue_size: 100, max_export_batch_size: 50 }
    }
    const fromFile = resolve(file, {})
    assert.strictEqual(fromFile.traces!.url, "http://file:4318/v1/traces")
    assert.strictEqual(fromFile.traces!.protocol, "http/json")
    assert.deepStrictEqual(Redacted.value(fromFile.traces!.headers), { authorization: "Basic file", "x-team": "ops" })
    assert.strictEqual(fromFile.traces!.compression, "gzip")
    assert.strictEqual(fromFile.traces!.timeoutMs, 2_000)
    assert.strictEqual(fromFile.traces!.scheduleDelayMs, 1_000)
    assert.strictEqual(fromFile.traces!.maxQueueSize, 100)
    assert.strictEqual(fromFile.traces!.maxExportBatchSize, 50)
    assert.strictEqual(fromFile.serviceName, "gateway-eu")
    assert.deepStrictEqual(fromFile.resourceAttributes, { "deployment.environment": "prod", region: "eu" })
    assert.deepStrictEqual(fromFile.sampler, { name: "parentbased_traceidratio", ratio: 0.1 })
    assert.isTrue(fromFile.captureContent)

    const overridden = resolve(file, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20env",
      OTEL_EXPORTER_OTLP_COMPRESSION: "none",
      OTEL_SERVICE_NAME: "gateway-us",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=staging,service.name=ignored",
      OTEL_TRACES_SAMPLER_ARG: "0.5",
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "false",
      OTEL_BSP_MAX_QUEUE_SIZE: "200"
    })
    assert.strictEqual(overridden.traces!.url, "http://env:4318/v1/traces")
    assert.strictEqual(overridden.traces!.protocol, "http/protobuf")
    // Header names are case-insensitive: the environment's replaces the file's; the file's other headers stay.
    assert.deepStrictEqual(Redacted.value(overridden.traces!.headers), { authorization: "Basic env", "x-team": "ops" })
    assert.strictEqual(overridden.traces!.compression, "none")
    assert.strictEqual(overridden.serviceName, "gateway-us")
    assert.deepStrictEqual(overridden.resourceAttributes, { "deployment.environment": "staging", region: "eu" })
    assert.deepStrictEqual(overridden.sampler, { name: "parentbased_traceidratio", ratio: 0.5 })
    assert.isFalse(overridden.captureContent)
    assert.strictEqual(overridden.traces!.maxQueueSize, 200)
  })

  it("takes service.name from OTEL_RESOURCE_ATTRIBUTES when OTEL_SERVICE_NAME is not set", () => {
    assert.strictEqual(
      resolve(undefined, { OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attributes" }).serviceName,
      "from-attributes"
    )
  })

  it("is off when disabled or when the exporter is none, whatever the endpoint; empty variables count as unset", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }
    assert.isNull(resolve(undefined, { ...endpoint, OTEL_SDK_DISABLED: "TRUE" }).traces)
    assert.isNull(resolve(undefined, { ...endpoint, OTEL_TRACES_EXPORTER: "none" }).traces)
    assert.isNull(resolve({ disabled: true }, endpoint).traces)
    assert.isNull(resolve({ traces_exporter: "none" }, endpoint).traces)
    assert.isNotNull(resolve({ disabled: true }, { ...endpoint, OTEL_SDK_DISABLED: "false" }).traces)
    assert.isNotNull(resolve(undefined, { ...endpoint, OTEL_SDK_DISABLED: "", OTEL_TRACES_EXPORTER: "" }).traces)
    assert.isNull(resolve({ endpoint: "http://file:4318" }, { OTEL_TRACES_EXPORTER: "otlp,none" }).traces)
  })

  it("names the variable, or the file and field, of a bad value", () => {
    const cases: Array<[Record<string, string>, FileTelemetry | undefined, RegExp]> = [
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_ENDPOINT: expected an http/
      ],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }, undefined, /^Invalid OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/],
      [
        {},
        { endpoint: "ftp://x" },
        /^Invalid configuration in gateway.yaml:\n {2}at telemetry.endpoint: expected an http/
      ],
      [
        { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported/
      ],
      [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "thrift" }, undefined, /^Invalid OTEL_EXPORTER_OTLP_TRACES_PROTOCOL/],
      [{ OTEL_TRACES_SAMPLER: "jaeger_remote" }, undefined, /^Invalid OTEL_TRACES_SAMPLER: expected one of always_on/],
      [
        { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" },
        undefined,
        /^Invalid OTEL_TRACES_SAMPLER_ARG: expected a ratio from 0 to 1/
      ],
      [
        { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "ten" },
        undefined,
        /^Invalid OTEL_TRACES_SAMPLER_ARG/
      ],
      [{ OTEL_SDK_DISABLED: "yes" }, undefined, /^Invalid OTEL_SDK_DISABLED: expected true or false, got 'yes'/],
      [{ OTEL_TRACES_EXPORTER: "zipkin" }, undefined, /^Invalid OTEL_TRACES_EXPORTER: 'zipkin' is not an exporter/],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: "novalue" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs/
      ],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: "bad header=1" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_HEADERS: 'bad header' is not a valid header name/
      ],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: "a=%zz" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_HEADERS: the value of 'a' is not valid percent-encoding/
      ],
      [
        {},
        { headers: { "bad header": "1" } },
        /^Invalid configuration in gateway.yaml:\n {2}at telemetry.headers: 'bad header'/
      ],
      [{ OTEL_RESOURCE_ATTRIBUTES: "=x" }, undefined, /^Invalid OTEL_RESOURCE_ATTRIBUTES/],
      [
        { OTEL_EXPORTER_OTLP_TIMEOUT: "10s" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_TIMEOUT: expected a whole number/
      ],
      [
        { OTEL_BSP_MAX_QUEUE_SIZE: "0" },
        undefined,
        /^Invalid OTEL_BSP_MAX_QUEUE_SIZE: expected a whole number of at least 1/
      ],
      [
        { OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "4096" },
        undefined,
        /^Invalid OTEL_BSP_MAX_EXPORT_BATCH_SIZE: a batch \(4096\) cannot be larger than the queue \(2048 spans\)/
      ],
      [
        {},
        { batch: { max_queue_size: 10, max_export_batch_size: 20 } },
        /^Invalid configuration in gateway.yaml:\n {2}at telemetry.batch.max_export_batch_size/
      ],
      [
        { OTEL_EXPORTER_OTLP_COMPRESSION: "brotli" },
        undefined,
        /^Invalid OTEL_EXPORTER_OTLP_COMPRESSION: expected gzip or none/
      ],
      [
        { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "1" },
        undefined,
        /^Invalid OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT/
      ]
    ]
    for (const [env, file, expected] of cases) {
      assert.match(failure(file, env), expected, JSON.stringify({ env, file }))
    }
  })

  it("checks settings even while export is off, so a mistake is not found the day it is turned on", () => {
    assert.match(failure(undefined, { OTEL_TRACES_SAMPLER: "sometimes" }), /^Invalid OTEL_TRACES_SAMPLER/)
  })

  it("reads the telemetry section of a YAML file, and refuses a misspelt field", () => {
    const file = Effect.runSync(parse(
      [
        "telemetry:",
        "  endpoint: http://tempo:4318",
        "  sampler: traceidratio",
        "  sampler_arg: 0.25",
        "  headers:",
        "    x-scope-orgid: tenant-1"
      ].join("\n"),
      "gateway.yaml"
    ))
    const settings = resolve(file.telemetry, {})
    assert.strictEqual(settings.traces!.url, "http://tempo:4318/v1/traces")
    assert.deepStrictEqual(settings.sampler, { name: "traceidratio", ratio: 0.25 })
    const misspelt = Effect.runSync(Effect.flip(parse("telemetry:\n  endpoit: http://x:4318\n", "gateway.yaml")))
    assert.match(misspelt.message, /at telemetry.endpoit: Unknown field/)
    const ratio = Effect.runSync(Effect.flip(parse("telemetry:\n  sampler_arg: 2\n", "gateway.yaml")))
    assert.match(ratio.message, /at telemetry.sampler_arg: .*ratio from 0 to 1/)
  })
})

/**
 * Tracing's settings, resolved the OpenTelemetry way: the standard `OTEL_*`
 * environment variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
 * and the OTLP exporter's) over the configuration file's `telemetry:`
 * section, over the defaults. An empty variable counts as unset. A bad value
 * is a start-up error naming the variable, or the file and the field.
 *
 * Export is on when a traces endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * as it is, or `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended), and
 * off when none is, when `OTEL_TRACES_EXPORTER` is `none`, or when
 * `OTEL_SDK_DISABLED` is `true`. gRPC is not spoken: `http/protobuf` (the
 * default) and `http/json` are.
 *
 * @since 0.1.0
 */
import { Effect, Redacted } from "effect"
import { ConfigError, type TelemetryConfig } from "./Config.ts"

/** How the roots of traces are sampled (and children, for the samplers not based on the parent). @category models */
export type SamplerName =
  | "always_on"
  | "always_off"
  | "traceidratio"
  | "parentbased_always_on"
  | "parentbased_always_off"
  | "parentbased_traceidratio"

/** The sampler names `OTEL_TRACES_SAMPLER` takes here. @category constants */
export const SAMPLERS: ReadonlyArray<SamplerName> = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
]

/** A sampler and, for the ratio samplers, its ratio. @category models */
export interface Sampler {
  readonly name: SamplerName
  /** From 0 to 1; 1 unless a ratio sampler is given one. */
  readonly ratio: number
}

/** Where and how spans are exported. @category models */
export interface TraceExport {
  /** The traces URL spans are posted to. */
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  /** Sent with every export (a vendor's key, often): never logged. */
  readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>
  readonly compression: "gzip" | "none"
  /** The longest one export request may take. */
  readonly timeoutMs: number
  /** How often the queue is exported when it does not fill a batch first. */
  readonly scheduleDelayMs: number
  /** The longest an export may take, retries included. */
  readonly exportTimeoutMs: number
  /** Spans waiting for export beyond this are dropped (and counted). */
  readonly maxQueueSize: number
  readonly maxExportBatchSize: number
}

/** Tracing's resolved settings. @category models */
export interface TelemetrySettings {
  /** Null: nothing is traced or exported (`off` says why). */
  readonly traces: TraceExport | null
  /** Why export is off, for the start-up line; null when it is on. */
  readonly off: string | null
  readonly sampler: Sampler
  readonly serviceName: string
  /** Resource attributes beside `service.name` (the operator's). */
  readonly resourceAttributes: Readonly<Record<string, string>>
  /** Prompts and answers are exported (as span events) only when true. */
  readonly captureContent: boolean
}

/** The defaults of the specification, and `modelgate` as the service's name. @category constants */
export const defaults = {
  serviceName: "modelgate",
  protocol: "http/protobuf",
  sampler: "parentbased_always_on",
  timeoutMs: 10_000,
  scheduleDelayMs: 5_000,
  exportTimeoutMs: 30_000,
  maxQueueSize: 2_048,
  maxExportBatchSize: 512
} as const

/** Settings with nothing exported (hosts that were given no telemetry settings). @category constants */
export const off: TelemetrySettings = {
  traces: null,
  off: "no OTLP endpoint is set",
  sampler: { name: defaults.sampler, ratio: 1 },
  serviceName: defaults.serviceName,
  resourceAttributes: {},
  captureContent: false
}

/** The environment, as `process.env` or `Deno.env.toObject()` give it. @category models */
export type Environment = Readonly<Record<string, string | undefined>>

/** A setting's value and where it came from, for messages. */
interface Found<A> {
  readonly value: A
  /** `Invalid OTEL_X` or `Invalid configuration in FILE:\n  at telemetry.x`. */
  readonly origin: string
}

/**
 * Resolves tracing's settings from the environment and the configuration
 * file's `telemetry:` section (`source` names the file in messages).
 *
 * @category resolving
 */
export const resolve = (
  file: TelemetryConfig | undefined,
  env: Environment,
  source: string
): Effect.Effect<TelemetrySettings, ConfigError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(resolveUnsafe(file ?? {}, env, source))
    } catch (error) {
      if (error instanceof ConfigError) return Effect.fail(error)
      throw error
    }
  })

const resolveUnsafe = (file: TelemetryConfig, env: Environment, source: string): TelemetrySettings => {
  const fromEnv = (name: string): Found<string> | undefined => {
    const value = env[name]
    return value === undefined || value.trim() === "" ? undefined : { value: value.trim(), origin: `Invalid ${name}` }
  }
  const fromFile = <A>(field: string, value: A | undefined): Found<A> | undefined =>
    value === undefined ? undefined : { value, origin: `Invalid configuration in ${source}:\n  at telemetry.${field}` }
  const fail = (origin: string, message: string): never => {
    throw new ConfigError({ message: `${origin}: ${message}` })
  }

  const bool = (name: string, fileValue: boolean | undefined): boolean | undefined => {
    const found = fromEnv(name)
    if (found === undefined) return fileValue
    const lower = found.value.toLowerCase()
    if (lower === "true") return true
    if (lower === "false") return false
    return fail(found.origin, `expected true or false, got '${found.value}'`)
  }
  const int = (names: ReadonlyArray<string>, field: string, fileValue: number | undefined, min: number) => {
    for (const name of names) {
      const found = fromEnv(name)
      if (found === undefined) continue
      if (!/^\d+$/.test(found.value) || Number(found.value) < min) {
        return fail(found.origin, `expected a whole number of at least ${min}, got '${found.value}'`)
      }
      return { value: Number(found.value), origin: found.origin }
    }
    return fromFile(field, fileValue)
  }

  // Checked first and always, so a mistake is reported even while export is off.
  const disabled = bool("OTEL_SDK_DISABLED", file.disabled) ?? false
  const exporterEnv = fromEnv("OTEL_TRACES_EXPORTER")
  let exporter: "otlp" | "none" = file.traces_exporter ?? "otlp"
  if (exporterEnv !== undefined) {
    const names = exporterEnv.value.split(",").map((name) => name.trim().toLowerCase()).filter((name) => name !== "")
    for (const name of names) {
      if (name !== "otlp" && name !== "none") {
        fail(exporterEnv.origin, `'${name}' is not an exporter this gateway has; use otlp (the default) or none`)
      }
    }
    exporter = names.includes("none") || names.length === 0 ? "none" : "otlp"
  }

  const protocolFound = fromEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? fromEnv("OTEL_EXPORTER_OTLP_PROTOCOL") ??
    fromFile("protocol", file.protocol)
  const protocol = protocolFound === undefined ? defaults.protocol : protocolFound.value
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    fail(
      protocolFound!.origin,
      protocol === "grpc"
        ? "grpc is not supported; use http/protobuf (the default, a collector's port 4318) or http/json"
        : `expected http/protobuf or http/json, got '${protocol}'`
    )
  }

  const url = endpoint(
    fromEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    fromEnv("OTEL_EXPORTER_OTLP_ENDPOINT"),
    fromFile("traces_endpoint", file.traces_endpoint),
    fromFile("endpoint", file.endpoint),
    fail
  )

  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(file.headers ?? {})) {
    if (!headerName.test(name)) {
      fail(`Invalid configuration in ${source}:\n  at telemetry.headers`, `'${name}' is not a valid header name`)
    }
    headers[name.toLowerCase()] = value
  }
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    const found = fromEnv(name)
    if (found === undefined) continue
    for (const [key, value] of keyValues(found, fail)) {
      if (!headerName.test(key)) fail(found.origin, `'${key}' is not a valid header name`)
      headers[key.toLowerCase()] = value
    }
  }

  const compressionFound = fromEnv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") ??
    fromEnv("OTEL_EXPORTER_OTLP_COMPRESSION") ?? fromFile("compression", file.compression)
  const compression = compressionFound === undefined ? "none" : compressionFound.value
  if (compression !== "gzip" && compression !== "none") {
    fail(compressionFound!.origin, `expected gzip or none, got '${compression}'`)
  }

  const timeoutMs =
    int(["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"], "timeout_ms", file.timeout_ms, 1)?.value ??
      defaults.timeoutMs
  const scheduleDelayMs = int(["OTEL_BSP_SCHEDULE_DELAY"], "batch.schedule_delay_ms", file.batch?.schedule_delay_ms, 1)
    ?.value ?? defaults.scheduleDelayMs
  const exportTimeoutMs = int(["OTEL_BSP_EXPORT_TIMEOUT"], "batch.export_timeout_ms", file.batch?.export_timeout_ms, 1)
    ?.value ?? defaults.exportTimeoutMs
  const maxQueueSize = int(["OTEL_BSP_MAX_QUEUE_SIZE"], "batch.max_queue_size", file.batch?.max_queue_size, 1)?.value ??
    defaults.maxQueueSize
  const batchFound = int(
    ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"],
    "batch.max_export_batch_size",
    file.batch?.max_export_batch_size,
    1
  )
  const maxExportBatchSize = batchFound?.value ?? Math.min(defaults.maxExportBatchSize, maxQueueSize)
  if (batchFound !== undefined && batchFound.value > maxQueueSize) {
    fail(batchFound.origin, `a batch (${batchFound.value}) cannot be larger than the queue (${maxQueueSize} spans)`)
  }

  const samplerFound = fromEnv("OTEL_TRACES_SAMPLER") ?? fromFile("sampler", file.sampler)
  const samplerName = samplerFound === undefined ? defaults.sampler : samplerFound.value
  if (!(SAMPLERS as ReadonlyArray<string>).includes(samplerName)) {
    fail(samplerFound!.origin, `expected one of ${SAMPLERS.join(", ")}, got '${samplerName}'`)
  }
  let ratio = 1
  if (samplerName.endsWith("traceidratio")) {
    const argEnv = fromEnv("OTEL_TRACES_SAMPLER_ARG")
    if (argEnv !== undefined) {
      const parsed = /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(argEnv.value) ? Number(argEnv.value) : Number.NaN
      if (!(parsed >= 0 && parsed <= 1)) {
        fail(argEnv.origin, `expected a ratio from 0 to 1 (such as 0.25) for ${samplerName}, got '${argEnv.value}'`)
      }
      ratio = parsed
    } else if (file.sampler_arg !== undefined) {
      ratio = file.sampler_arg
    }
  }

  const attributes: Record<string, string> = {}
  for (const [key, value] of Object.entries(file.resource_attributes ?? {})) {
    if (key === "") fail(`Invalid configuration in ${source}:\n  at telemetry.resource_attributes`, "an empty key")
    attributes[key] = value
  }
  const attributesEnv = fromEnv("OTEL_RESOURCE_ATTRIBUTES")
  const envAttributes: Record<string, string> = {}
  if (attributesEnv !== undefined) {
    for (const [key, value] of keyValues(attributesEnv, fail)) envAttributes[key] = value
  }
  const serviceName = fromEnv("OTEL_SERVICE_NAME")?.value ?? envAttributes["service.name"] ?? file.service_name ??
    attributes["service.name"] ?? defaults.serviceName
  const resourceAttributes = { ...attributes, ...envAttributes }
  delete resourceAttributes["service.name"]

  const captureContent = bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", file.capture_content) ?? false

  const why = disabled
    ? "OTEL_SDK_DISABLED (or telemetry.disabled) is true"
    : exporter === "none"
    ? "OTEL_TRACES_EXPORTER (or telemetry.traces_exporter) is none"
    : url === undefined
    ? "no OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint)"
    : null
  return {
    traces: why !== null || url === undefined ? null : {
      url,
      protocol: protocol as TraceExport["protocol"],
      headers: Redacted.make(headers),
      compression: compression as TraceExport["compression"],
      timeoutMs,
      scheduleDelayMs,
      exportTimeoutMs,
      maxQueueSize,
      maxExportBatchSize
    },
    off: why,
    sampler: { name: samplerName as SamplerName, ratio },
    serviceName,
    resourceAttributes,
    captureContent
  }
}

/** An HTTP header name (RFC 9110's token). */
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * The traces URL: a traces endpoint as it is, or a base endpoint with
 * `v1/traces` appended to its path, from whichever of the four is found
 * first (the environment's traces endpoint, its base endpoint, the file's
 * traces endpoint, its base endpoint).
 */
const endpoint = (
  envTraces: Found<string> | undefined,
  envBase: Found<string> | undefined,
  fileTraces: Found<string> | undefined,
  fileBase: Found<string> | undefined,
  fail: (origin: string, message: string) => never
): string | undefined => {
  const chosen = envTraces ?? envBase ?? fileTraces ?? fileBase
  if (chosen === undefined) return undefined
  let url: URL
  try {
    url = new URL(chosen.value)
  } catch {
    return fail(
      chosen.origin,
      `expected an http:// or https:// URL such as http://localhost:4318, got '${chosen.value}'`
    )
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(
      chosen.origin,
      `expected an http:// or https:// URL such as http://localhost:4318, got '${chosen.value}'`
    )
  }
  const isBase = chosen === envBase || chosen === fileBase
  if (isBase) url.pathname = `${url.pathname.endsWith("/") ? url.pathname : `${url.pathname}/`}v1/traces`
  return url.toString()
}

/**
 * The `key=value,key=value` lists of `OTEL_EXPORTER_OTLP_HEADERS` and
 * `OTEL_RESOURCE_ATTRIBUTES`: keys and values trimmed, values
 * percent-decoded; empty members skipped.
 */
const keyValues = (
  found: Found<string>,
  fail: (origin: string, message: string) => never
): Array<readonly [string, string]> => {
  const pairs: Array<readonly [string, string]> = []
  for (const member of found.value.split(",")) {
    if (member.trim() === "") continue
    const eq = member.indexOf("=")
    const key = eq === -1 ? "" : member.slice(0, eq).trim()
    if (key === "") fail(found.origin, `expected key=value pairs separated by commas, got '${member.trim()}'`)
    let value: string
    try {
      value = decodeURIComponent(member.slice(eq + 1).trim())
    } catch {
      return fail(found.origin, `the value of '${key}' is not valid percent-encoding`)
    }
    pairs.push([key, value])
  }
  return pairs
}

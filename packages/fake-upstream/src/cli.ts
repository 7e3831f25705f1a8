/**
 * Command line entry:
 *
 *   node packages/fake-upstream/src/cli.ts --listen 127.0.0.1:9001 \
 *     [--api-key K] [--latency-ms N] [--chunk-interval-ms N] [--slow-ms N] [--vertex-key-out FILE]
 *
 * Prints "fake-upstream listening on <url>" once ready; SIGINT/SIGTERM close it.
 * `--vertex-key-out` writes a service-account key file the Vertex side
 * accepts (a key made for this process, never committed; its `token_uri` this
 * server) for a demo's `credentials_file`. Bedrock takes the test-only access
 * key pair it prints.
 */
import { writeFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { TEST_API_KEY, TEST_CREDENTIALS } from "./Bedrock.ts"
import { parseListenAddress } from "./Listen.ts"
import { type FakeUpstreamOptions, startFakeUpstream } from "./Server.ts"

const USAGE =
  `usage: fake-upstream --listen HOST:PORT [--api-key K] [--latency-ms N] [--chunk-interval-ms N] [--slow-ms N] [--vertex-key-out FILE]`

const nonNegative = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got "${value}"`)
  return n
}

export const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      listen: { type: "string", default: "127.0.0.1:9001" },
      "api-key": { type: "string" },
      "latency-ms": { type: "string" },
      "chunk-interval-ms": { type: "string" },
      "slow-ms": { type: "string" },
      "vertex-key-out": { type: "string" },
      help: { type: "boolean", short: "h" }
    },
    strict: true
  })
  if (values.help === true) {
    console.log(USAGE)
    return
  }
  const { host, port } = parseListenAddress(values.listen)
  const latencyMs = nonNegative("latency-ms", values["latency-ms"])
  const chunkIntervalMs = nonNegative("chunk-interval-ms", values["chunk-interval-ms"])
  const slowMs = nonNegative("slow-ms", values["slow-ms"])
  const options: FakeUpstreamOptions = {
    host,
    port,
    ...(values["api-key"] !== undefined ? { apiKey: values["api-key"] } : {}),
    ...(latencyMs !== undefined ? { latencyMs } : {}),
    ...(chunkIntervalMs !== undefined ? { chunkIntervalMs } : {}),
    ...(slowMs !== undefined ? { slowMs } : {})
  }
  const server = await startFakeUpstream(options)
  console.log(`fake-upstream listening on ${server.url}`)
  console.log(
    `bedrock (test-only credentials): access_key_id ${TEST_CREDENTIALS.accessKeyId}, secret_access_key ${TEST_CREDENTIALS.secretAccessKey}, api_key ${TEST_API_KEY}, region us-east-1`
  )
  const keyOut = values["vertex-key-out"]
  if (keyOut !== undefined) {
    writeFileSync(keyOut, JSON.stringify(server.vertexKeyFile(), null, 2), { mode: 0o600 })
    console.log(`vertex: service-account key for project fake-project written to ${keyOut}`)
  }
  const stop = (): void => {
    void server.close().then(() => process.exit(0))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error))
    console.error(USAGE)
    process.exit(1)
  })
}

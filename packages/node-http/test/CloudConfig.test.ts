/**
 * Vertex AI and Bedrock channels in the configuration file, as the issue
 * writes them: `credentials_file` read (relative to the file), the base URL
 * defaulting to the region's endpoint, the access key pair or API key as the
 * channel's keys; wrong or missing fields refused by name; and the store
 * keeping them (the credentials encrypted, read back whole).
 */
import { assert, describe, it } from "@effect/vitest"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import * as Store from "@modelgate/store/Store"
import { Effect, Layer, Redacted } from "effect"
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ConfigFile from "../src/ConfigFile.ts"
import * as Provision from "../src/Provision.ts"

const SOURCE = "gateway.yaml"

const keyFile = () => ({
  type: "service_account",
  project_id: "my-project",
  private_key_id: "0123456789abcdef",
  private_key: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" })
    .toString(),
  client_email: "gateway@my-project.iam.gserviceaccount.com",
  token_uri: "https://oauth2.googleapis.com/token"
})

const YAML = `
channels:
  - name: vertex
    type: vertex
    project: my-project
    location: us-east5
    credentials_file: vertex-sa.json
    models: [gemini-2.5-flash, claude-sonnet-4-5]
    model_map: {claude-sonnet-4-5: claude-sonnet-4-5@20250929}
  - name: bedrock
    type: bedrock
    region: us-east-1
    access_key_id: AKIAIOSFODNN7EXAMPLE
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
    session_token: FwoGZXIvYXdzEBYaDEXAMPLETOKEN
    models: [claude-sonnet-4-5, nova-pro]
    model_map: {claude-sonnet-4-5: us.anthropic.claude-sonnet-4-5-20250929-v1:0, nova-pro: amazon.nova-pro-v1:0}
  - name: bedrock-key
    type: bedrock
    region: eu-west-1
    base_url: https://bedrock.proxy.test
    api_key: ABSKexampleBedrockApiKey0000
    models: [nova-pro]
`

describe("cloud channels in the configuration file", () => {
  it.effect("reads them as the issue writes them, credentials_file included, and the store keeps them", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-clouds-"))
      const key = keyFile()
      writeFileSync(join(dir, "vertex-sa.json"), JSON.stringify(key))
      writeFileSync(join(dir, "gateway.yaml"), YAML)
      const file = yield* ConfigFile.load(join(dir, "gateway.yaml"))
      const input = yield* Provision.toInput(file, SOURCE)
      const [vertex, bedrock, apiKey] = input.channels!
      assert.strictEqual(vertex!.baseUrl, "https://us-east5-aiplatform.googleapis.com")
      assert.deepStrictEqual(vertex!.cloud, { project: "my-project", location: "us-east5" })
      assert.deepStrictEqual(JSON.parse(vertex!.apiKeys[0]!), key)
      assert.strictEqual(bedrock!.baseUrl, "https://bedrock-runtime.us-east-1.amazonaws.com")
      assert.deepStrictEqual(bedrock!.cloud, { region: "us-east-1" })
      assert.deepStrictEqual(JSON.parse(bedrock!.apiKeys[0]!), {
        access_key_id: "AKIAIOSFODNN7EXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        session_token: "FwoGZXIvYXdzEBYaDEXAMPLETOKEN"
      })
      assert.strictEqual(apiKey!.baseUrl, "https://bedrock.proxy.test")
      assert.deepStrictEqual(apiKey!.apiKeys, ["ABSKexampleBedrockApiKey0000"])

      const store = Store.layer({
        url: "sqlite::memory:",
        masterKey: { secret: Redacted.make("cloud-config-test-secret-0123456789") },
        nodeId: "t"
      })
      const channels = yield* Effect.gen(function*() {
        yield* Provision.apply(file, { configSource: SOURCE } as never)
        return yield* (yield* CatalogRepo).listChannels
      }).pipe(Effect.provide(Layer.fresh(store)))
      const stored = new Map(channels.map((record) => [record.channel.name, record.channel]))
      assert.deepStrictEqual(stored.get("vertex")!.cloud, { project: "my-project", location: "us-east5" })
      assert.deepStrictEqual(stored.get("vertex")!.apiKeys, vertex!.apiKeys)
      assert.strictEqual(stored.get("vertex")!.type, "vertex")
      assert.deepStrictEqual(stored.get("bedrock")!.cloud, { region: "us-east-1" })
      assert.deepStrictEqual(stored.get("bedrock")!.apiKeys, bedrock!.apiKeys)
      assert.isUndefined(stored.get("bedrock-key")!.cloud?.project)
    }))

  it.effect("refuses what a cloud channel lacks or does not take, naming the field", () =>
    Effect.gen(function*() {
      const refused = (channel: Record<string, unknown>) =>
        Effect.map(
          Effect.flip(Provision.toInput({ channels: [{ name: "c", models: ["m"], ...channel }] as never }, SOURCE)),
          (error) => error.message
        )
      assert.include(
        yield* refused({ type: "vertex", location: "us-east5", credentials: keyFile() }),
        "at channels[0].project: a vertex channel needs project"
      )
      assert.include(
        yield* refused({ type: "vertex", project: "my-project", credentials: keyFile() }),
        "at channels[0].location: a vertex channel needs location"
      )
      assert.include(
        yield* refused({ type: "vertex", project: "my-project", location: "us-east5" }),
        "at channels[0]: Expected credentials or credentials_file (a service account's key)"
      )
      assert.include(
        yield* refused({
          type: "vertex",
          project: "my-project",
          location: "us-east5",
          credentials: "{\"type\":\"x\"}"
        }),
        "at channels[0].credentials: the key file is of type 'x'"
      )
      assert.include(
        yield* refused({ type: "bedrock", access_key_id: "AKIAIOSFODNN7EXAMPLE", secret_access_key: "x".repeat(40) }),
        "at channels[0].region: a bedrock channel needs region"
      )
      assert.include(
        yield* refused({ type: "bedrock", region: "us-east-1", access_key_id: "AKIAIOSFODNN7EXAMPLE" }),
        "at channels[0].secret_access_key: Expected both access_key_id and secret_access_key"
      )
      assert.include(
        yield* refused({ type: "bedrock", region: "us-east-1", project: "p", api_key: "ABSKexample0000" }),
        "at channels[0].project: only a vertex channel has project (this one is bedrock)"
      )
      assert.include(
        yield* refused({ type: "openai", api_key: "k" }),
        "at channels[0].base_url: Expected the upstream's base URL"
      )
      const missing = yield* Effect.flip(
        ConfigFile.load(join(mkdtempSync(join(tmpdir(), "modelgate-clouds-")), "absent.yaml"))
      )
      assert.include(missing.message, "no such file")
      const dir = mkdtempSync(join(tmpdir(), "modelgate-clouds-"))
      writeFileSync(
        join(dir, "gateway.yaml"),
        "channels:\n  - {name: v, type: vertex, project: my-project, location: us-east5, credentials_file: nowhere.json, models: [m]}\n"
      )
      const unread = yield* Effect.flip(ConfigFile.load(join(dir, "gateway.yaml")))
      assert.include(unread.message, "at channels[0].credentials_file: cannot read the service-account key file")
      assert.include(unread.message, "no such file")
    }))
})

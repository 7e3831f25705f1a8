/**
 * A cloud channel's credentials as its keys hold them (`Channel.apiKeys`,
 * stored encrypted like every upstream key), and what a cloud channel must
 * say of where it is served (`Channel.cloud`). The same checks run on the
 * configuration file, the store and the admin API, so a bad channel is
 * refused with the same words wherever it comes from.
 *
 * - `vertex`: each key is a service-account key, the JSON file Google issues
 *   (`type: service_account`, `client_email`, `private_key` in PEM,
 *   `token_uri`). The signing and the token exchange are `@modelgate/vertex`'s.
 * - `bedrock`: each key is a Bedrock API key (sent as `Authorization:
 *   Bearer`), or an access key pair written as JSON:
 *   `{"access_key_id": "AKIA…", "secret_access_key": "…", "session_token": "…"}`
 *   (`session_token` for temporary credentials only); `bedrockKeyText` writes
 *   it.
 *
 * @since 0.1.0
 */
import type { ChannelCloud, ChannelType } from "./Domain.ts"

/** A Bedrock key, read. @category bedrock */
export type BedrockKey =
  | { readonly kind: "api_key"; readonly apiKey: string }
  | {
    readonly kind: "aws"
    readonly accessKeyId: string
    readonly secretAccessKey: string
    readonly sessionToken?: string | undefined
  }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The key text of an access key pair (what a `bedrock` channel's key holds).
 *
 * @example
 * ```ts
 * bedrockKeyText({ accessKeyId: "AKIAEXAMPLE", secretAccessKey: "wJalr..." })
 * // '{"access_key_id":"AKIAEXAMPLE","secret_access_key":"wJalr..."}'
 * ```
 *
 * @category bedrock
 */
export const bedrockKeyText = (
  pair: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string | undefined }
): string =>
  JSON.stringify({
    access_key_id: pair.accessKeyId,
    secret_access_key: pair.secretAccessKey,
    ...(pair.sessionToken === undefined ? {} : { session_token: pair.sessionToken })
  })

/**
 * Reads a `bedrock` channel's key: an access key pair (JSON, see above) or a
 * Bedrock API key (any other text without spaces); a message saying what is
 * wrong otherwise.
 *
 * @category bedrock
 */
export const bedrockKey = (text: string): BedrockKey | string => {
  const trimmed = text.trim()
  if (trimmed.startsWith("{")) {
    const json = parseJson(trimmed)
    if (!isRecord(json)) return "an access key pair must be a JSON object"
    const id = json.access_key_id
    const secret = json.secret_access_key
    const token = json.session_token
    const unknown = Object.keys(json).filter((k) =>
      k !== "access_key_id" && k !== "secret_access_key" && k !== "session_token"
    )
    if (unknown.length > 0) {
      return `an access key pair has access_key_id, secret_access_key and session_token only, not ${unknown.join(", ")}`
    }
    if (typeof id !== "string" || !/^[A-Z0-9]{16,128}$/.test(id)) {
      return "access_key_id must be an AWS access key id (16 or more capital letters and digits, such as AKIA…)"
    }
    if (typeof secret !== "string" || secret.length < 16 || /\s/.test(secret)) {
      return "secret_access_key must be the access key's secret (40 characters, no spaces)"
    }
    if (token !== undefined && (typeof token !== "string" || token.length === 0 || /\s/.test(token))) {
      return "session_token must be the temporary credentials' session token (no spaces)"
    }
    return token === undefined
      ? { kind: "aws", accessKeyId: id, secretAccessKey: secret }
      : { kind: "aws", accessKeyId: id, secretAccessKey: secret, sessionToken: token }
  }
  if (trimmed.length < 8 || /\s/.test(trimmed)) {
    return "a Bedrock key is a Bedrock API key (no spaces) or an access key pair as JSON"
  }
  return { kind: "api_key", apiKey: trimmed }
}

/**
 * What is wrong with a `vertex` channel's key (a service-account key file's
 * JSON), or undefined when it has what the gateway needs. The private key
 * itself is checked when it is first used (WebCrypto imports it).
 *
 * @category vertex
 */
export const vertexKeyProblem = (text: string): string | undefined => {
  const json = parseJson(text)
  if (!isRecord(json)) return "a Vertex AI key must be a service account's key file (JSON), as Google issues it"
  if (json.type !== undefined && json.type !== "service_account") {
    return `the key file is of type '${
      String(json.type).slice(0, 40)
    }'; Vertex AI channels need a service account's key (type service_account)`
  }
  if (typeof json.client_email !== "string" || !json.client_email.includes("@")) {
    return "the service-account key has no client_email"
  }
  if (typeof json.private_key !== "string" || !json.private_key.includes("-----BEGIN PRIVATE KEY-----")) {
    return "the service-account key has no private_key in PEM (-----BEGIN PRIVATE KEY-----)"
  }
  if (json.token_uri !== undefined && (typeof json.token_uri !== "string" || !/^https?:\/\//.test(json.token_uri))) {
    return "the service-account key's token_uri is not an http(s) URL"
  }
  return undefined
}

/** What is wrong with one key of a channel of `type` (undefined: nothing, or not a cloud type). @category checks */
export const keyProblem = (type: ChannelType, text: string): string | undefined => {
  if (type === "vertex") return vertexKeyProblem(text)
  if (type === "bedrock") {
    const key = bedrockKey(text)
    return typeof key === "string" ? key : undefined
  }
  return undefined
}

const NAME = /^[a-z0-9][a-z0-9-]*[a-z0-9]$/

/**
 * What is wrong with where a channel of `type` is served: a `vertex` channel
 * needs `project` and `location`, a `bedrock` channel `region`, and other
 * types none of them. Returns the field and the message, or undefined.
 *
 * @category checks
 */
export const cloudProblem = (
  type: ChannelType,
  cloud: ChannelCloud | undefined
): { readonly field: string; readonly message: string } | undefined => {
  if (type === "vertex") {
    const project = cloud?.project
    if (project === undefined || project === "") {
      return { field: "project", message: "a vertex channel needs project (the Google Cloud project id)" }
    }
    if (!/^[a-z][a-z0-9.:-]{3,62}[a-z0-9]$/.test(project)) {
      return { field: "project", message: `'${project.slice(0, 60)}' is not a Google Cloud project id` }
    }
    const location = cloud?.location
    if (location === undefined || location === "") {
      return {
        field: "location",
        message: "a vertex channel needs location (a Vertex AI region such as us-east5, or global)"
      }
    }
    if (!NAME.test(location)) {
      return { field: "location", message: `'${location.slice(0, 60)}' is not a Vertex AI location` }
    }
    if (cloud?.region !== undefined) return { field: "region", message: "region is for bedrock channels" }
    for (const [model, publisher] of Object.entries(cloud?.publishers ?? {})) {
      if (publisher !== "google" && publisher !== "anthropic") {
        return { field: `publishers.${model}`, message: "expected google or anthropic" }
      }
    }
    return undefined
  }
  if (type === "bedrock") {
    const region = cloud?.region
    if (region === undefined || region === "") {
      return { field: "region", message: "a bedrock channel needs region (an AWS region such as us-east-1)" }
    }
    if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region)) {
      return { field: "region", message: `'${region.slice(0, 60)}' is not an AWS region (such as us-east-1)` }
    }
    if (cloud?.project !== undefined) return { field: "project", message: "project is for vertex channels" }
    if (cloud?.location !== undefined) return { field: "location", message: "location is for vertex channels" }
    return undefined
  }
  if (cloud !== undefined && (cloud.project ?? cloud.location ?? cloud.region) !== undefined) {
    const field = cloud.project !== undefined ? "project" : cloud.location !== undefined ? "location" : "region"
    return { field, message: `${field} is for ${field === "region" ? "bedrock" : "vertex"} channels, not ${type}` }
  }
  return undefined
}

/**
 * The default base URL of a cloud channel: Vertex AI's regional endpoint
 * (`https://{location}-aiplatform.googleapis.com`, `https://aiplatform.googleapis.com`
 * for `global`), Bedrock Runtime's (`https://bedrock-runtime.{region}.amazonaws.com`);
 * undefined for other types (they name theirs).
 *
 * @category urls
 */
export const defaultBaseUrl = (type: ChannelType, cloud: ChannelCloud | undefined): string | undefined => {
  if (type === "vertex" && cloud?.location !== undefined) {
    const location = cloud.location
    return location === "global"
      ? "https://aiplatform.googleapis.com"
      : location === "us" || location === "eu"
      ? `https://aiplatform.${location}.rep.googleapis.com`
      : `https://${location}-aiplatform.googleapis.com`
  }
  if (type === "bedrock" && cloud?.region !== undefined) return `https://bedrock-runtime.${cloud.region}.amazonaws.com`
  return undefined
}

/**
 * How a key is named where its secret must not show (the console, health
 * reasons): its last four characters; a service-account key by its
 * `client_email` (not a secret), an access key pair by its key id's last four.
 *
 * @category hints
 */
export const keyHint = (key: string): string => {
  if (key.startsWith("{")) {
    const json = parseJson(key)
    if (isRecord(json)) {
      if (typeof json.client_email === "string") return json.client_email
      if (typeof json.access_key_id === "string") return `…${json.access_key_id.slice(-4)}`
    }
  }
  return `…${key.slice(-4)}`
}

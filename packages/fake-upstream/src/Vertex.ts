/**
 * Google Vertex AI, strict: a token endpoint (`POST /token`, the key file's
 * `token_uri`) that takes only a JWT bearer assertion signed RS256 by a known
 * service account's key, with Google's claims and a lifetime of at most an
 * hour, and issues short-lived access tokens; and the publisher endpoints
 * (`/v1/projects/{project}/locations/{location}/publishers/{google|anthropic}/models/{model}:{method}`),
 * which take only an unexpired token it issued, for its project, and answer
 * in Vertex's shapes: Gemini's generateContent (SSE with `alt=sse`),
 * countTokens and `:predict` embeddings under `google`; Claude's Messages
 * under `anthropic` (`rawPredict`, `streamRawPredict`, the body without
 * `model` and with `anthropic_version: "vertex-2023-10-16"`, and
 * `count-tokens:rawPredict`). Refusals are Google's (token endpoint:
 * `{"error": "invalid_grant", ...}`; API: `UNAUTHENTICATED` with
 * `ACCESS_TOKEN_EXPIRED`, `PERMISSION_DENIED` with `IAM_PERMISSION_DENIED`).
 */
import { createPublicKey, generateKeyPairSync, type KeyObject, verify } from "node:crypto"
import type { OutgoingHttpHeaders, ServerResponse } from "node:http"
import { anthropicCountTokens, anthropicMessages } from "./Anthropic.ts"
import { embedding, isRecord } from "./Content.ts"
import { anthropicErrorBody, failure, geminiErrorBody } from "./Errors.ts"
import { geminiCountTokens, geminiGenerate, geminiStream } from "./Gemini.ts"
import type { Scenario } from "./Scenario.ts"
import { type CallContext, sendJson } from "./Writer.ts"

/** A service account the token endpoint knows: its email, the public half of its key, and the key's id. */
export interface ServiceAccount {
  readonly clientEmail: string
  readonly publicKey: KeyObject | string
  readonly privateKeyId?: string | undefined
}

/** What the Vertex fake accepts. */
export interface VertexOptions {
  /** The project every call must name (default `fake-project`). */
  readonly project?: string
  /** The service accounts it knows (default: one test key made when first needed, see `testKeyFile`). */
  readonly serviceAccounts?: ReadonlyArray<ServiceAccount>
  /** The lifetime of the access tokens it issues, in seconds (default 3599). */
  readonly tokenTtlSeconds?: number
}

/** The embedding task types `:predict` takes in an instance's `task_type`. */
const TASK_TYPES = [
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY"
]

/** The token endpoint's path. */
export const TOKEN_PATH = "/token"

const PUBLISHER_PATH =
  /^\/v1(?:beta1)?\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/

/** Model Garden's list of a publisher's models (`GET /v1beta1/publishers/{publisher}/models`). */
const LIST_PATH = /^\/v1beta1\/publishers\/([^/]+)\/models$/

/** The Vertex paths this fake serves. */
export const isVertexPath = (path: string): boolean =>
  path === TOKEN_PATH || PUBLISHER_PATH.test(path) || LIST_PATH.test(path)

/** Whether a path is Model Garden's list of a publisher's models. */
export const isVertexListPath = (path: string): boolean => LIST_PATH.test(path)

/** The publisher models the fake's Model Garden lists (image and speech models among them, as Google's does). */
export const VERTEX_PUBLISHER_MODELS: Readonly<Record<string, ReadonlyArray<string>>> = {
  google: [
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash-lite",
    "gemini-embedding-001",
    "text-embedding-005",
    "text-multilingual-embedding-002",
    "imagen-4.0-generate-001",
    "chirp-3"
  ],
  anthropic: ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]
}

/**
 * `GET /v1beta1/publishers/{publisher}/models?pageSize&pageToken`: Model
 * Garden's list (a valid token of any project; no project in the path),
 * `{"publisherModels": [{"name": "publishers/google/models/…", "versionId",
 * "launchStage", "openSourceCategory", "publisherModelTemplate"}],
 * "nextPageToken"}`, pages of `pageSize` (default 100).
 */
export const handlePublisherList = (
  res: ServerResponse,
  state: VertexState,
  call: Pick<VertexCall, "path" | "query" | "authorization" | "now">
): void => {
  const publisher = LIST_PATH.exec(call.path)![1]!
  const rpc = "ListPublisherModels"
  const bearer = /^Bearer\s+(.+)$/i.exec(call.authorization ?? "")
  if (bearer === null) return unauthenticated(res, "CREDENTIALS_MISSING", rpc)
  const tokenState = state.tokenState(bearer[1]!.trim(), call.now)
  if (tokenState === "expired") return unauthenticated(res, "ACCESS_TOKEN_EXPIRED", rpc)
  if (tokenState === "unknown") return unauthenticated(res, "ACCESS_TOKEN_TYPE_UNSUPPORTED", rpc)
  const models = VERTEX_PUBLISHER_MODELS[publisher]
  if (models === undefined) {
    return sendJson(res, 404, geminiErrorBody(404, `Publisher ${publisher} not found.`))
  }
  const size = call.query.pageSize === undefined ? 100 : Number(call.query.pageSize)
  const start = call.query.pageToken === undefined || call.query.pageToken === ""
    ? 0
    : Number(Buffer.from(call.query.pageToken, "base64url").toString("utf8"))
  if (!Number.isInteger(size) || size < 1 || !Number.isInteger(start) || start < 0) {
    return sendJson(res, 400, geminiErrorBody(400, "Invalid page size or page token."))
  }
  const page = models.slice(start, start + size)
  const next = start + size < models.length ? Buffer.from(String(start + size)).toString("base64url") : undefined
  sendJson(
    res,
    200,
    JSON.stringify({
      publisherModels: page.map((model) => ({
        name: `publishers/${publisher}/models/${model}`,
        versionId: "001",
        openSourceCategory: publisher === "google" ? "PROPRIETARY" : "THIRD_PARTY_OWNED_OSS",
        launchStage: "GA",
        publisherModelTemplate: `projects/{project}/locations/{location}/publishers/${publisher}/models/${model}@001`
      })),
      ...(next === undefined ? {} : { nextPageToken: next })
    })
  )
}

/** The test key this fake made (private half included), its email and id. */
interface TestKey {
  readonly privateKeyPem: string
  readonly account: ServiceAccount
}

/** The state of one fake's Vertex side: its keys and the tokens it issued. */
export class VertexState {
  private testKey: TestKey | undefined
  private readonly tokens = new Map<string, { readonly expiresAt: number; readonly clientEmail: string }>()
  private issued = 0
  private readonly options: VertexOptions
  readonly project: string

  constructor(options: VertexOptions) {
    this.options = options
    this.project = options.project ?? "fake-project"
  }

  /** The known service accounts (the test key is made on first use when none were given). */
  accounts(): ReadonlyArray<ServiceAccount> {
    return this.options.serviceAccounts ?? [this.key().account]
  }

  private key(): TestKey {
    if (this.testKey === undefined) {
      // Made for this process only: no private key is ever written to the repository.
      const pair = generateKeyPairSync("rsa", { modulusLength: 2048 })
      this.testKey = {
        privateKeyPem: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        account: {
          clientEmail: `gateway@${this.project}.iam.gserviceaccount.com`,
          publicKey: pair.publicKey,
          privateKeyId: "fake-upstream-test-key"
        }
      }
    }
    return this.testKey
  }

  /**
   * A service-account key file for this fake (its test key, made for this
   * process; `token_uri` at `baseUrl`), as Google Cloud issues them.
   */
  keyFile(baseUrl: string): Record<string, string> {
    const key = this.key()
    return {
      type: "service_account",
      project_id: this.project,
      private_key_id: key.account.privateKeyId!,
      private_key: key.privateKeyPem,
      client_email: key.account.clientEmail,
      client_id: "100000000000000000000",
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: `${baseUrl}${TOKEN_PATH}`,
      universe_domain: "googleapis.com"
    }
  }

  issue(clientEmail: string, now: number): { readonly token: string; readonly ttl: number } {
    const ttl = this.options.tokenTtlSeconds ?? 3599
    const token = `ya29.fake-${++this.issued}-${Math.random().toString(36).slice(2, 10)}`
    this.tokens.set(token, { expiresAt: now + ttl * 1000, clientEmail })
    if (this.tokens.size > 10_000) {
      for (const [t, v] of this.tokens) if (v.expiresAt <= now) this.tokens.delete(t)
    }
    return { token, ttl }
  }

  /** `valid`, `expired` or `unknown`. */
  tokenState(token: string, now: number): "valid" | "expired" | "unknown" {
    const entry = this.tokens.get(token)
    return entry === undefined ? "unknown" : entry.expiresAt <= now ? "expired" : "valid"
  }

  /** How many tokens were issued. */
  tokensIssued(): number {
    return this.issued
  }
}

const tokenError = (res: ServerResponse, status: number, error: string, description: string): void =>
  sendJson(res, status, JSON.stringify({ error, error_description: description }), { "cache-control": "no-store" })

const base64url = (text: string): Buffer | undefined =>
  /^[A-Za-z0-9_-]*$/.test(text) ? Buffer.from(text, "base64url") : undefined

const parseJson = (bytes: Buffer | undefined): Record<string, unknown> | undefined => {
  if (bytes === undefined) return undefined
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"))
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

const SHORT_LIVED =
  "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."

/** `POST /token`: the JWT bearer grant, checked as Google checks it. */
export const handleToken = (
  res: ServerResponse,
  state: VertexState,
  method: string,
  body: Buffer,
  baseUrl: string,
  now: number
): void => {
  if (method !== "POST") return tokenError(res, 405, "invalid_request", "Method not allowed: use POST.")
  const form = new URLSearchParams(body.toString("utf8"))
  const grant = form.get("grant_type")
  if (grant !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    return tokenError(res, 400, "unsupported_grant_type", `Invalid grant_type: ${grant ?? ""}`)
  }
  const assertion = form.get("assertion") ?? ""
  const parts = assertion.split(".")
  const header = parts.length === 3 ? parseJson(base64url(parts[0]!)) : undefined
  const claims = parts.length === 3 ? parseJson(base64url(parts[1]!)) : undefined
  const signature = parts.length === 3 ? base64url(parts[2]!) : undefined
  if (header === undefined || claims === undefined || signature === undefined) {
    return tokenError(res, 400, "invalid_grant", "Invalid JWT: the assertion is not three base64url parts of JSON.")
  }
  if (header.alg !== "RS256") return tokenError(res, 400, "invalid_grant", "Invalid JWT: the algorithm must be RS256.")
  const account = state.accounts().find((a) => a.clientEmail === claims.iss)
  if (account === undefined) return tokenError(res, 400, "invalid_grant", "Invalid grant: account not found")
  if (account.privateKeyId !== undefined && header.kid !== undefined && header.kid !== account.privateKeyId) {
    return tokenError(res, 400, "invalid_grant", "Invalid JWT Signature.")
  }
  const publicKey = typeof account.publicKey === "string" ? createPublicKey(account.publicKey) : account.publicKey
  const signed = Buffer.from(`${parts[0]}.${parts[1]}`, "utf8")
  if (!verify("sha256", signed, publicKey, signature)) {
    return tokenError(res, 400, "invalid_grant", "Invalid JWT Signature.")
  }
  if (claims.aud !== `${baseUrl}${TOKEN_PATH}`) {
    return tokenError(res, 400, "invalid_grant", "Invalid JWT: Failed audience check.")
  }
  const scope = typeof claims.scope === "string" ? claims.scope.split(/\s+/) : []
  if (scope.length === 0 || scope[0] === "") {
    return tokenError(res, 400, "invalid_scope", "Empty or missing scope not allowed.")
  }
  if (!scope.includes("https://www.googleapis.com/auth/cloud-platform")) {
    return tokenError(
      res,
      400,
      "invalid_scope",
      "Vertex AI needs the https://www.googleapis.com/auth/cloud-platform scope."
    )
  }
  const iat = claims.iat
  const exp = claims.exp
  const seconds = now / 1000
  if (
    typeof iat !== "number" || typeof exp !== "number" || exp <= iat || exp - iat > 3600 ||
    iat > seconds + 300 || exp <= seconds
  ) {
    return tokenError(res, 400, "invalid_grant", SHORT_LIVED)
  }
  const { token, ttl } = state.issue(account.clientEmail, now)
  sendJson(res, 200, JSON.stringify({ access_token: token, expires_in: ttl, token_type: "Bearer" }), {
    "cache-control": "no-store"
  })
}

const UNAUTHENTICATED_MESSAGE =
  "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

const unauthenticated = (res: ServerResponse, reason: string, method: string): void =>
  sendJson(
    res,
    401,
    geminiErrorBody(401, UNAUTHENTICATED_MESSAGE, [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason,
      domain: "googleapis.com",
      metadata: {
        method: `google.cloud.aiplatform.v1.PredictionService.${method}`,
        service: "aiplatform.googleapis.com"
      }
    }]),
    { "www-authenticate": "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"" }
  )

export interface VertexCall {
  readonly seq: number
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly authorization: string | undefined
  readonly body: unknown
  readonly scenario: Scenario
  readonly now: number
}

const RPC: Readonly<Record<string, string>> = {
  generateContent: "GenerateContent",
  streamGenerateContent: "StreamGenerateContent",
  countTokens: "CountTokens",
  predict: "Predict",
  rawPredict: "RawPredict",
  streamRawPredict: "StreamRawPredict"
}

/** A publisher endpoint: the token, the project, then the publisher's method. */
export const handlePublisher = (
  res: ServerResponse,
  state: VertexState,
  call: VertexCall
): Promise<void> | void => {
  const match = PUBLISHER_PATH.exec(call.path)!
  const [, project, location, publisher, rawModel, method] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string
  ]
  let model = rawModel
  try {
    model = decodeURIComponent(rawModel)
  } catch {
    // kept as sent
  }
  const rpc = RPC[method] ?? method
  const bearer = /^Bearer\s+(.+)$/i.exec(call.authorization ?? "")
  if (bearer === null) return unauthenticated(res, "CREDENTIALS_MISSING", rpc)
  const tokenState = state.tokenState(bearer[1]!.trim(), call.now)
  if (tokenState === "expired") return unauthenticated(res, "ACCESS_TOKEN_EXPIRED", rpc)
  if (tokenState === "unknown") return unauthenticated(res, "ACCESS_TOKEN_TYPE_UNSUPPORTED", rpc)
  const resource = `projects/${project}/locations/${location}/publishers/${publisher}/models/${model}`
  if (decodeURIComponent(project) !== state.project) {
    return sendJson(
      res,
      403,
      geminiErrorBody(
        403,
        `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/${resource}' (or it may not exist).`,
        [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "IAM_PERMISSION_DENIED",
          domain: "aiplatform.googleapis.com",
          metadata: {
            permission: "aiplatform.endpoints.predict",
            resource: `projects/${project}/locations/${location}`
          }
        }]
      )
    )
  }
  const headers: OutgoingHttpHeaders = {}
  const ctx: CallContext = { seq: call.seq, model, scenario: call.scenario, headers }
  const json = isRecord(call.body) ? call.body : undefined
  if (publisher === "google") {
    if (call.scenario.failStatus !== undefined) {
      const error = failure("gemini", call.scenario.failStatus, model, `req_fake${call.seq}`)
      return sendJson(res, error.status, error.body, error.headers)
    }
    if (json === undefined) return sendJson(res, 400, geminiErrorBody(400, "Invalid JSON payload received."))
    switch (method) {
      case "generateContent":
      case "streamGenerateContent": {
        const contents = Array.isArray(json.contents) ? json.contents : []
        const roleless = contents.findIndex((c) => !isRecord(c) || (c.role !== "user" && c.role !== "model"))
        if (contents.length === 0 || roleless >= 0) {
          return sendJson(res, 400, geminiErrorBody(400, "Please use a valid role: user, model."))
        }
        return method === "generateContent"
          ? geminiGenerate(res, json, ctx)
          : geminiStream(res, json, ctx, call.query.alt === "sse")
      }
      case "countTokens":
        return geminiCountTokens(res, json, ctx)
      case "predict": {
        const instances = Array.isArray(json.instances) ? json.instances : undefined
        if (
          instances === undefined || instances.length === 0 ||
          !instances.every((i) => isRecord(i) && typeof i.content === "string")
        ) {
          return sendJson(res, 400, geminiErrorBody(400, "Invalid instances: each instance needs a 'content' string."))
        }
        const badTask = instances.find((i) =>
          (i as Record<string, unknown>).task_type !== undefined &&
          !TASK_TYPES.includes((i as Record<string, unknown>).task_type as string)
        )
        if (badTask !== undefined) {
          return sendJson(
            res,
            400,
            geminiErrorBody(
              400,
              `Invalid task_type: ${JSON.stringify((badTask as Record<string, unknown>).task_type)}.`
            )
          )
        }
        // Gemini's embedding models embed one text a request; the text-embedding models up to 250.
        const most = model.startsWith("gemini-embedding") ? 1 : 250
        if (instances.length > most) {
          return sendJson(
            res,
            400,
            geminiErrorBody(
              400,
              `Unable to submit request because the model ${model} supports up to ${most} instance${
                most === 1 ? "" : "s"
              } per request, but ${instances.length} were given.`
            )
          )
        }
        const parameters = isRecord(json.parameters) ? json.parameters : {}
        const dimensions = typeof parameters.outputDimensionality === "number" ? parameters.outputDimensionality : 768
        return sendJson(
          res,
          200,
          JSON.stringify({
            predictions: instances.map((instance) => {
              const content = (instance as { content: string }).content
              return {
                embeddings: {
                  values: embedding(content, dimensions),
                  statistics: { token_count: Math.max(1, Math.ceil(content.length / 4)), truncated: false }
                }
              }
            }),
            metadata: {
              billableCharacterCount: instances.reduce((n, i) => n + (i as { content: string }).content.length, 0)
            }
          })
        )
      }
      default:
        return sendJson(res, 404, geminiErrorBody(404, `Method not found: ${method}`))
    }
  }
  if (publisher === "anthropic") {
    if (call.scenario.failStatus !== undefined) {
      if (call.scenario.failStatus === 429) {
        return sendJson(
          res,
          429,
          geminiErrorBody(
            429,
            `Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-${model}. Please submit a quota increase request.`
          )
        )
      }
      const error = failure("anthropic", call.scenario.failStatus, model, `req_vrtx_${call.seq}`)
      return sendJson(res, error.status, error.body, error.headers)
    }
    const invalid = (message: string) =>
      sendJson(res, 400, anthropicErrorBody("invalid_request_error", message, `req_vrtx_${call.seq}`))
    if (json === undefined) return invalid("Request body must be a JSON object.")
    if (method !== "rawPredict" && method !== "streamRawPredict") {
      return sendJson(res, 404, geminiErrorBody(404, `Method not found: ${method}`))
    }
    if (json.anthropic_version !== "vertex-2023-10-16") {
      return invalid("anthropic_version: Input should be 'vertex-2023-10-16'")
    }
    if (model === "count-tokens") {
      if (typeof json.model !== "string") return invalid("model: Field required")
      return anthropicCountTokens(res, json, { ...ctx, model: json.model })
    }
    if ("model" in json) return invalid("model: Extra inputs are not permitted")
    const { anthropic_version: _, ...messages } = json
    return anthropicMessages(
      res,
      { ...messages, model, stream: method === "streamRawPredict" || json.stream === true },
      ctx
    )
  }
  return sendJson(res, 404, geminiErrorBody(404, `Publisher Model \`${resource}\` not found.`))
}

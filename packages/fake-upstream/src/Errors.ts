/**
 * Error envelopes of each dialect, as the real services send them
 * (see docs/reference wire-formats §7). Auth bodies are precomputed.
 */
import type { OutgoingHttpHeaders } from "node:http"

export type Dialect = "openai" | "azure" | "gemini" | "anthropic"

export interface ErrorResponse {
  readonly status: number
  readonly body: string
  readonly headers?: OutgoingHttpHeaders
}

// ---------------------------------------------------------------- OpenAI

export const openaiErrorBody = (message: string, type: string, param: string | null, code: string | null): string =>
  JSON.stringify({ error: { message, type, param, code } })

export const OPENAI_MISSING_KEY: ErrorResponse = {
  status: 401,
  body: openaiErrorBody(
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
    "invalid_request_error",
    null,
    null
  )
}

export const OPENAI_INVALID_KEY: ErrorResponse = {
  status: 401,
  body: openaiErrorBody("Incorrect API key provided", "invalid_request_error", null, "invalid_api_key")
}

const openaiFailure = (status: number, model: string): ErrorResponse => {
  if (status === 429) {
    return {
      status,
      body: openaiErrorBody(
        `Rate limit reached for ${model} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.`,
        "requests",
        null,
        "rate_limit_exceeded"
      ),
      headers: { "retry-after": "1" }
    }
  }
  if (status === 401) return OPENAI_INVALID_KEY
  if (status === 404) {
    return {
      status,
      body: openaiErrorBody(
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        null,
        "model_not_found"
      )
    }
  }
  if (status >= 500) {
    const message = status === 503
      ? "That model is currently overloaded with other requests. You can retry your request."
      : "The server had an error while processing your request. Sorry about that!"
    return { status, body: openaiErrorBody(message, "server_error", null, null) }
  }
  return {
    status,
    body: openaiErrorBody(`fake-upstream: simulated HTTP ${status}`, "invalid_request_error", null, null)
  }
}

// ----------------------------------------------------------------- Azure

export const AZURE_BAD_KEY: ErrorResponse = {
  status: 401,
  body: JSON.stringify({
    error: {
      code: "401",
      message:
        "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
    }
  })
}

// ---------------------------------------------------------------- Gemini

const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

export const googleStatus = (status: number): string =>
  GOOGLE_STATUS[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION")

export const geminiErrorBody = (code: number, message: string, details?: ReadonlyArray<unknown>): string =>
  JSON.stringify({
    error: details === undefined
      ? { code, message, status: googleStatus(code) }
      : { code, message, status: googleStatus(code), details }
  })

const INVALID_KEY_MESSAGE = "API key not valid. Please pass a valid API key."

export const GEMINI_INVALID_KEY: ErrorResponse = {
  status: 400,
  body: geminiErrorBody(400, INVALID_KEY_MESSAGE, [
    {
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "API_KEY_INVALID",
      domain: "googleapis.com",
      metadata: { service: "generativelanguage.googleapis.com" }
    },
    {
      "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
      locale: "en-US",
      message: INVALID_KEY_MESSAGE
    }
  ])
}

export const GEMINI_MISSING_KEY: ErrorResponse = {
  status: 403,
  body: geminiErrorBody(
    403,
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
  )
}

const geminiFailure = (status: number, model: string): ErrorResponse => {
  if (status === 429) {
    return {
      status,
      body: geminiErrorBody(
        429,
        `You exceeded your current quota, please check your plan and billing details. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: ${model}. Please retry in 1s.`,
        [
          {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            violations: [
              {
                quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                quotaDimensions: { location: "global", model },
                quotaValue: "10"
              }
            ]
          },
          { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1s" }
        ]
      ),
      headers: { "retry-after": "1" }
    }
  }
  if (status === 400) return { status, body: geminiErrorBody(400, "fake-upstream: simulated HTTP 400") }
  if (status === 404) {
    return {
      status,
      body: geminiErrorBody(
        404,
        `models/${model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`
      )
    }
  }
  if (status === 500) {
    return {
      status,
      body: geminiErrorBody(
        500,
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
      )
    }
  }
  if (status === 503) {
    return { status, body: geminiErrorBody(503, "The model is overloaded. Please try again later.") }
  }
  return { status, body: geminiErrorBody(status, `fake-upstream: simulated HTTP ${status}`) }
}

// ------------------------------------------------------------- Anthropic

export const anthropicErrorBody = (type: string, message: string, requestId: string): string =>
  JSON.stringify({ type: "error", error: { type, message }, request_id: requestId })

const ANTHROPIC_TYPE: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

export const anthropicType = (status: number): string =>
  ANTHROPIC_TYPE[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")

export const anthropicMissingKey = (requestId: string): ErrorResponse => ({
  status: 401,
  body: anthropicErrorBody("authentication_error", "x-api-key header is required", requestId)
})

export const anthropicInvalidKey = (requestId: string): ErrorResponse => ({
  status: 401,
  body: anthropicErrorBody("authentication_error", "invalid x-api-key", requestId)
})

const anthropicFailure = (status: number, model: string, requestId: string): ErrorResponse => {
  const type = anthropicType(status)
  const message = status === 429
    ? "Number of request tokens has exceeded your per-minute rate limit"
    : status === 529
    ? "Overloaded"
    : status === 404
    ? `model: ${model}`
    : status === 500
    ? "Internal server error"
    : `fake-upstream: simulated HTTP ${status}`
  return {
    status,
    body: anthropicErrorBody(type, message, requestId),
    ...(status === 429 ? { headers: { "retry-after": "1" } } : {})
  }
}

// ------------------------------------------------------------------ shared

/** The error a `x-fake-fail: <status>` request gets, in the route's dialect. */
export const failure = (dialect: Dialect, status: number, model: string, requestId: string): ErrorResponse => {
  switch (dialect) {
    case "openai":
    case "azure":
      return openaiFailure(status, model)
    case "gemini":
      return geminiFailure(status, model)
    case "anthropic":
      return anthropicFailure(status, model, requestId)
  }
}

/** A 400 for a body that is not a JSON object, in the route's dialect. */
export const badRequest = (dialect: Dialect, message: string, requestId: string): ErrorResponse => {
  switch (dialect) {
    case "openai":
    case "azure":
      return { status: 400, body: openaiErrorBody(message, "invalid_request_error", null, null) }
    case "gemini":
      return { status: 400, body: geminiErrorBody(400, message) }
    case "anthropic":
      return { status: 400, body: anthropicErrorBody("invalid_request_error", message, requestId) }
  }
}

export const notFound = (dialect: Dialect, method: string, path: string, requestId: string): ErrorResponse => {
  switch (dialect) {
    case "openai":
    case "azure":
      return {
        status: 404,
        body: openaiErrorBody(`Invalid URL (${method} ${path})`, "invalid_request_error", null, null)
      }
    case "gemini":
      return { status: 404, body: geminiErrorBody(404, `Method not found: ${method} ${path}`) }
    case "anthropic":
      return { status: 404, body: anthropicErrorBody("not_found_error", `Not Found: ${method} ${path}`, requestId) }
  }
}

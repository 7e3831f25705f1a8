/**
 * Embeddings, for any client dialect that has them (OpenAI `POST
 * /v1/embeddings`, Gemini `:embedContent` and `:batchEmbedContents`), over
 * any channel whose dialect makes them: admitted (rate limits, then the hold)
 * and billed like a chat call, the prompt being the input and no output
 * tokens.
 *
 * A channel of the client's own dialect gets the client's body with only the
 * model changed (fields this gateway does not model included); a channel of
 * another dialect gets the canonical request (`Canonical.EmbedRequest`), when
 * the inputs translate (text only, one vector size: otherwise such channels
 * are left out, and the call is refused with the reason when no channel
 * remains).
 *
 * Routed like a chat call (`Failover.run`): the group's channels for the
 * model in routing order, failing over on connection errors, timeouts, 5xx
 * and 429 up to `routing.max_attempts`, every attempt feeding its key's
 * breaker (refused credentials disable the key) and listed on the usage
 * record, the answer read within the channel's timeouts. An attempt sent in
 * several requests (a model that takes fewer texts a request than were
 * given) that fails at a later one has had its earlier ones answered, and
 * billed by its upstream: the call is charged them however it ends
 * (`Calls.AttemptLog.answeredParts`).
 *
 * @since 0.1.0
 */
import { type Canonical, type Dialect, Domain, GatewayError, Tokens } from "@modelgate/core"
import { Clock, Effect } from "effect"
import * as Settlement from "../money/Settlement.ts"
import type * as Telemetry from "../telemetry/Telemetry.ts"
import * as Exchange from "../wire/Exchange.ts"
import type * as Upstream from "../wire/Upstream.ts"
import * as Calls from "./Calls.ts"
import * as ClientGone from "./ClientGone.ts"
import * as Dialects from "./Dialects.ts"
import * as Failover from "./Failover.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Refusals from "./Refusals.ts"

/** One embeddings call's inputs. @category models */
export interface EmbeddingsInput {
  readonly requestId: string
  readonly key: Domain.ApiKey
  readonly client: Dialect.ClientDialect
  readonly embeddings: Dialect.ClientEmbeddings
  readonly body: string
  readonly hints: Dialect.RouteHints & { readonly operation?: string | undefined }
  /** The call's trace, when tracing is on (`GatewayRequest.trace`). */
  readonly trace?: Telemetry.CallTrace | undefined
}

/**
 * Runs an embeddings call. A call refused before its hold is logged too
 * (`Refusals`).
 *
 * @category calls
 */
export const handle = (input: EmbeddingsInput) => {
  const admitting = new Refusals.Admitting(input.hints.model, false)
  return Refusals.logged(input, admitting, run(input, admitting))
}

const run = Effect.fnUntraced(function*(input: EmbeddingsInput, admitting: Refusals.Admitting) {
  const { client, embeddings } = input
  const startedAt = yield* Clock.currentTimeMillis
  const call = yield* embeddings.decode(input.body, input.hints)
  const bound = Tokens.bodyTokenBound(Tokens.utf8Length(input.body))
  return yield* Calls.billed(
    {
      requestId: input.requestId,
      startedAt,
      key: input.key,
      client,
      model: call.model,
      use: "embed",
      stream: false,
      tokens: () => call.tokens,
      trace: input.trace,
      operation: "embeddings"
    },
    admitting,
    () => ({ promptTokens: bound, outputTokens: 0 }),
    ({ log, model, permit, route, settlement }) =>
      Effect.gen(function*() {
        const canonical = call.canonical
        const translated = GatewayError.isGatewayError(canonical) ? undefined : canonical
        const upstreamOf = (c: Domain.Channel) => Dialects.ofChannel(c, Domain.upstreamModel(c, model.id))
        const embedding = route.channels.filter((c) => upstreamOf(c).embeddings !== undefined)
        // A channel of the client's own dialect takes its body as it is, unless its endpoint takes only its own
        // shape (Vertex AI's `:predict`): then the request is translated like any other.
        const relays = (c: Domain.Channel) => {
          const upstream = upstreamOf(c)
          return upstream.dialect === client.dialect && upstream.embeddings?.translateOnly !== true
        }
        const channels = embedding.filter((c) => relays(c) || translated !== undefined)
        if (channels.length === 0) {
          // Only other dialects' channels serve the model, and these inputs do not translate: say why.
          if (GatewayError.isGatewayError(canonical) && embedding.length > 0) return yield* Effect.fail(canonical)
          const bedrock = route.channels.length > 0 && route.channels.every((c) => c.type === "bedrock")
          return yield* new GatewayError.UnsupportedFeature({
            message: bedrock
              ? `'${model.id}' is not an embedding model on the bedrock channels serving it in your group: Bedrock makes embeddings with Amazon Titan Text Embeddings and Cohere Embed models.`
              : `No channel serving '${model.id}' in your group can make embeddings.`
          })
        }
        const attempt = (target: Failover.Target, at: Upstream.Deadlines, record: Failover.AttemptRecord) =>
          Effect.gen(function*() {
            const { channel } = target
            const upstream = upstreamOf(channel)
            const upstreamModel = Domain.upstreamModel(channel, model.id)
            log.to(channel.name, upstreamModel, upstream.dialect)
            const same = relays(channel)
            const make = upstream.embeddings!
            const url = make.url(channel, upstreamModel, same ? call.operation : undefined)
            if (same) {
              const text = yield* Failover.exchange(target, upstream, url, call.forward(upstreamModel), at, record)
              const relayed = yield* embeddings.passthrough(
                text,
                upstreamModel === model.id ? undefined : model.id,
                channel.name
              )
              return { body: relayed.body, promptTokens: relayed.promptTokens, usageRejected: relayed.usageRejected }
            }
            const decoded = yield* translatedAnswer(
              make,
              translated!,
              upstreamModel,
              channel.name,
              (body) => Failover.exchangeAnswer(target, upstream, url, body, at, record),
              // Parts answered before a later one failed: billed by the upstream, charged with the call.
              (answered, metered) =>
                log.answeredParts.push({
                  attempt: log.tried.indexOf(record) + 1,
                  answered,
                  of: translated!.inputs.length,
                  metered
                })
            )
            return {
              body: JSON.stringify(embeddings.encode(decoded, call, model.id)),
              promptTokens: decoded.promptTokens,
              usageRejected: decoded.usageRejected
            }
          })
        const answer = yield* Failover.run({
          requestId: input.requestId,
          startedAt,
          model: model.id,
          channels,
          tried: log.tried,
          trace: input.trace,
          operation: "embeddings",
          // A client that leaves while an attempt is under way: the answer is still read, and charged.
          attempt: (target, at, record) =>
            ClientGone.outliving(
              { log, settlement },
              record,
              attempt(target, at, record),
              (answer) =>
                settlement.finish(
                  Settlement.plus(log.consumed(), meteredOf(answer, call.tokens)),
                  ClientGone.closed,
                  log.leg()
                )
            )
        })
        log.ttfbMs = (yield* Clock.currentTimeMillis) - startedAt
        // Each upstream's bill: the answer's, and the parts of failed attempts answered before it.
        yield* settlement.finish(
          Settlement.plus(log.consumed(), meteredOf(answer, call.tokens)),
          { status: 200, errorCode: null, ttfbMs: log.ttfbMs },
          log.leg()
        )
        return Exchange.jsonText(answer.body, 200, {
          ...RateLimits.successHeaders(client, permit, startedAt),
          "x-request-id": input.requestId
        })
      })
  )
})

/**
 * A translated request's answer: one request, or several in order when the
 * model takes fewer inputs a request than were given
 * (`UpstreamEmbeddings.inputsPerRequest`), their vectors joined and their
 * tokens summed (a part that reports none, or a figure refused, makes the
 * whole unreported, to be counted locally).
 *
 * When a part fails (or the attempt is cut) after others were answered, the
 * upstream has billed those: `answeredBefore` gets how many texts they held
 * and what they consumed (the tokens they reported, summed as above, else the
 * local count of their texts), and the attempt fails as it would have.
 */
const translatedAnswer = <E, R>(
  make: Dialect.UpstreamEmbeddings,
  request: Canonical.EmbedRequest,
  upstreamModel: string,
  channel: string,
  send: (
    body: string
  ) => Effect.Effect<{ readonly text: string; readonly headers: Readonly<Record<string, string>> }, E, R>,
  answeredBefore: (texts: number, metered: Settlement.Metered) => void
) => {
  const per = Math.max(1, make.inputsPerRequest?.(upstreamModel) ?? request.inputs.length)
  if (request.inputs.length <= per) {
    return Effect.gen(function*() {
      const body = yield* make.encode(request, upstreamModel)
      const answer = yield* send(body)
      return yield* make.decode(answer.text, request.inputs.length, channel, answer.headers)
    })
  }
  return Effect.suspend(() => {
    const vectors: Array<ReadonlyArray<number>> = []
    let promptTokens: number | undefined = 0
    let usageRejected: string | undefined
    // The texts the parts answered so far, and their local count.
    let answered = 0
    let counted = 0
    const parts = Effect.gen(function*() {
      for (let at = 0; at < request.inputs.length; at += per) {
        const inputs = request.inputs.slice(at, at + per)
        const body = yield* make.encode({ ...request, inputs }, upstreamModel)
        const answer = yield* send(body)
        const part = yield* make.decode(answer.text, inputs.length, channel, answer.headers)
        vectors.push(...part.vectors)
        usageRejected ??= part.usageRejected
        promptTokens = promptTokens === undefined || part.promptTokens === undefined
          ? undefined
          : promptTokens + part.promptTokens
        answered += inputs.length
        for (const input of inputs) counted += Tokens.embedTextTokens(input)
      }
      const response: Canonical.EmbedResponse = usageRejected !== undefined
        ? { vectors, usageRejected }
        : promptTokens !== undefined
        ? { vectors, promptTokens }
        : { vectors }
      return response
    })
    return Effect.onError(parts, () =>
      Effect.sync(() => {
        if (answered > 0) answeredBefore(answered, meteredOf({ promptTokens, usageRejected }, counted))
      }))
  })
}

/** An embeddings answer as the attempt read it. */
interface EmbedAnswer {
  readonly body: string
  readonly promptTokens?: number | undefined
  readonly usageRejected?: string | undefined
}

/** What an embeddings answer consumed: its reported tokens, else the local count (`tokens`). */
const meteredOf = (answer: Omit<EmbedAnswer, "body">, tokens: number): Settlement.Metered =>
  answer.promptTokens !== undefined
    ? { promptTokens: answer.promptTokens, completionTokens: 0, cachedTokens: 0, reported: true }
    : {
      promptTokens: tokens,
      completionTokens: 0,
      cachedTokens: 0,
      reported: false,
      usageRejected: answer.usageRejected
    }

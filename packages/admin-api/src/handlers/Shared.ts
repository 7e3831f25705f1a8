/**
 * Small pieces the handler groups share: store and core failures as
 * `ApiError`s, cache invalidation, USD amounts from requests, paging.
 *
 * @since 0.1.0
 */
import { Invalidation, Money, Text } from "@modelgate/core"
import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import * as ApiError from "../ApiError.ts"

/**
 * Runs a store or core operation, turning its failures into `ApiError`s (an
 * unexpected one is logged and becomes a 500).
 *
 * @category errors
 */
export const orApiError = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ApiError.ApiError, R> =>
  Effect.catch(effect, (error) => Effect.flatMap(ApiError.fromUnknown(error), Effect.fail))

/**
 * Announces a change admission depends on (see core's `Invalidation`).
 *
 * @category caches
 */
export const invalidate = Effect.fnUntraced(function*(topic: Invalidation.Topic, ids?: ReadonlyArray<string>) {
  yield* (yield* Invalidation.Invalidation).invalidate(topic, ids)
})

/**
 * A USD amount from a request in nano-dollars (`null` stays null, absent stays
 * undefined); one beyond the largest accepted amount is a 400 naming `param`.
 *
 * @category money
 */
export const parseNanos = <V extends string | null | undefined>(
  value: V,
  param: string
): Effect.Effect<V extends string ? bigint : V extends null ? null : undefined, ApiError.ApiError> => {
  if (value === undefined) return Effect.succeed(undefined as never)
  if (value === null) return Effect.succeed(null as never)
  const nanos = Money.usdToNanos(value)
  return nanos === undefined || nanos > Money.MAX_NANOS || nanos < -Money.MAX_NANOS
    ? Effect.fail(
      ApiError.invalid(
        `${param}: '${Text.clip(value)}' is not a USD amount of at most ${Money.formatUsd(Money.MAX_NANOS)}`,
        param
      )
    )
    : Effect.succeed(nanos as never)
}

/** The page size a query asks for (default 50). @category paging */
export const pageLimit = (query: { readonly limit?: number | undefined }): number => query.limit ?? 50

/**
 * A JSON answer written by hand (for answers that set a cookie), encoded with
 * the endpoint's own success Schema.
 *
 * @category responses
 */
export const jsonWith = <S extends Schema.Top>(schema: S, value: S["Type"], headers: Record<string, string>) =>
  Effect.map(
    Effect.orDie(Schema.encodeUnknownEffect(schema as unknown as Schema.Codec<unknown, unknown>)(value)),
    (body) => HttpServerResponse.jsonUnsafe(body, { headers })
  )

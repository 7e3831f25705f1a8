/**
 * Per-channel request parameters (`params.defaults`, `params.overrides`) and
 * the `stream_options` switch, applied to the body sent upstream, in the
 * channel's own wire format:
 *
 * - a default fills a field the client did not send; when both are objects,
 *   the default fills the client's object key by key;
 * - an override replaces what the client sent; when both are objects, the
 *   override replaces key by key; a `null` override removes the field;
 * - with `stream_options: false` the body carries no `stream_options`.
 *
 * Nothing here runs for a channel without parameters and with the switch on:
 * the fast path forwards the body without decoding it again.
 *
 * @since 0.1.0
 */
import * as Domain from "../domain/Domain.ts"

/** What a channel changes in upstream bodies; undefined when it changes nothing. @category models */
export interface BodyEdit {
  readonly params: Domain.ChannelParams | undefined
  /** False: remove `stream_options` (OpenAI-format upstreams that reject it). */
  readonly streamOptions: boolean
}

/**
 * The edit a channel makes to bodies in `dialect` (the channel's own), or
 * undefined when it makes none.
 *
 * @category models
 */
export const editOf = (channel: Domain.Channel): BodyEdit | undefined => {
  const params = Domain.hasParams(channel.params) ? channel.params : undefined
  const dropStreamOptions = !channel.streamOptions && Domain.dialectOf(channel.type) === "openai"
  return params === undefined && !dropStreamOptions ? undefined : { params, streamOptions: !dropStreamOptions }
}

type Json = Domain.ChannelParams["defaults"][string]

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const fill = (target: Record<string, unknown>, defaults: Readonly<Record<string, Json>>): Record<string, unknown> => {
  let out: Record<string, unknown> | undefined
  for (const name of Object.keys(defaults)) {
    const given = target[name]
    const wanted = defaults[name]
    const next = given === undefined || given === null
      ? wanted
      : isObject(given) && isObject(wanted)
      ? fill(given, wanted as Readonly<Record<string, Json>>)
      : given
    if (next !== given) (out ??= { ...target })[name] = next
  }
  return out ?? target
}

const override = (
  target: Record<string, unknown>,
  overrides: Readonly<Record<string, Json>>
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...target }
  for (const name of Object.keys(overrides)) {
    const wanted = overrides[name]
    const given = out[name]
    if (wanted === null) delete out[name]
    else if (isObject(given) && isObject(wanted)) out[name] = override(given, wanted as Readonly<Record<string, Json>>)
    else out[name] = wanted
  }
  return out
}

/**
 * Applies a channel's parameters to a body object (the client's is never
 * changed: a copy is returned).
 *
 * @category editing
 */
export const apply = (body: Record<string, unknown>, params: Domain.ChannelParams): Record<string, unknown> => {
  const filled = fill(body, params.defaults)
  return Object.keys(params.overrides).length === 0 ? filled : override(filled, params.overrides)
}

/**
 * Applies an edit to a body object.
 *
 * @category editing
 */
export const edit = (body: Record<string, unknown>, change: BodyEdit): Record<string, unknown> => {
  const out = change.params === undefined ? { ...body } : apply(body, change.params)
  if (!change.streamOptions && "stream_options" in out) {
    const copy = out === body ? { ...out } : out
    delete copy.stream_options
    return copy
  }
  return out
}

/**
 * Applies an edit to an encoded JSON body (the translation path, where the
 * body was just encoded for the channel's dialect).
 *
 * @category editing
 */
export const editText = (text: string, change: BodyEdit): string => {
  const parsed: unknown = JSON.parse(text)
  return isObject(parsed) ? JSON.stringify(edit(parsed, change)) : text
}

/**
 * UTF-8 text and bytes, with the web-standard codecs every runtime has (Node,
 * Bun, Deno, browsers, workers); core's types name no platform globals, so
 * they are declared here, once.
 *
 * @since 0.1.0
 */

declare const TextDecoder: new(
  label?: string,
  options?: { readonly ignoreBOM?: boolean }
) => { decode(input?: Uint8Array, options?: { readonly stream?: boolean }): string }
declare const TextEncoder: new() => { encode(input: string): Uint8Array }

const decoder = new TextDecoder()
const exact = new TextDecoder("utf-8", { ignoreBOM: true })
const encoder = new TextEncoder()

/**
 * The text of whole UTF-8 bytes (an invalid sequence reads as U+FFFD).
 *
 * @category decoding
 */
export const decode = (bytes: Uint8Array): string => decoder.decode(bytes)

/**
 * UTF-8 bytes as text, a leading U+FEFF kept as a character (not dropped as a
 * byte-order mark): for bytes that encode a value exactly, such as an id.
 *
 * @category decoding
 */
export const decodeExact = (bytes: Uint8Array): string => exact.decode(bytes)

/**
 * The UTF-8 bytes of a text.
 *
 * @category encoding
 */
export const encode = (text: string): Uint8Array => encoder.encode(text)

/**
 * Decodes bytes that arrive in pieces, a character split between two pieces
 * included: `push` gives the text of the characters completed so far, `end`
 * what is left.
 *
 * @category decoding
 */
export class StreamDecoder {
  private readonly decoder = new TextDecoder()

  push(bytes: Uint8Array): string {
    return this.decoder.decode(bytes, { stream: true })
  }

  end(): string {
    return this.decoder.decode()
  }
}

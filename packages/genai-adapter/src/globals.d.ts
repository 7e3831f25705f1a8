/**
 * The one web-standard global this package uses (`types: []` keeps Node's and
 * the DOM's declarations out): `TextDecoder`, available in Node, Bun, Deno,
 * browsers and workers. Used by `Passthrough.PassthroughMeter.feedBytes`.
 *
 * @since 0.1.0
 */
declare global {
  interface TextDecodeOptions {
    readonly stream?: boolean
  }
  interface TextDecoder {
    decode(input?: Uint8Array, options?: TextDecodeOptions): string
  }
  var TextDecoder: {
    prototype: TextDecoder
    new(label?: string): TextDecoder
  }
}

export {}

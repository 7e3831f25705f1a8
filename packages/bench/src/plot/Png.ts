/**
 * A minimal PNG encoder: 8-bit RGB, no interlace, filter "None" on every
 * scanline, compressed with `node:zlib`'s deflate. Enough for charts, with no
 * dependency and no browser.
 *
 * @since 0.1.0
 */
import { deflateSync } from "node:zlib"

/** The 8 bytes every PNG file starts with. @category constants */
export const PNG_SIGNATURE: Uint8Array = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** CRC-32 (ISO-HDLC, as PNG chunks use) of `bytes`. @category encoding */
export const crc32 = (bytes: Uint8Array, initial = 0): number => {
  let c = (initial ^ 0xffffffff) >>> 0
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Uint8Array): Buffer => {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, "latin1")
  out.set(data, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}

/**
 * Encodes `rgb` (width x height x 3 bytes, rows top to bottom) as a PNG file.
 * Throws when the buffer's length does not match the size.
 *
 * @category encoding
 */
export const encodePng = (width: number, height: number, rgb: Uint8Array): Buffer => {
  if (!(Number.isInteger(width) && width > 0 && Number.isInteger(height) && height > 0)) {
    throw new RangeError(`encodePng: width and height must be positive integers, got ${width}x${height}`)
  }
  if (rgb.length !== width * height * 3) {
    throw new RangeError(
      `encodePng: rgb must hold ${width * height * 3} bytes for ${width}x${height}, got ${rgb.length}`
    )
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // colour type: truecolour
  header[10] = 0 // deflate
  header[11] = 0 // adaptive filtering
  header[12] = 0 // no interlace
  const stride = width * 3
  const raw = Buffer.alloc((stride + 1) * height)
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0 // filter: None
    raw.set(rgb.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1)
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw, { level: 9 })),
    chunk("IEND", new Uint8Array(0))
  ])
}

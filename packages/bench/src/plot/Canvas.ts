/**
 * An RGB raster with the few drawing operations charts need: pixels, filled
 * rectangles, thick lines, dashed lines and 5x7 text (optionally rotated for
 * vertical axis titles). `toPng` encodes it.
 *
 * @since 0.1.0
 */
import { glyph, GLYPH_HEIGHT, GLYPH_WIDTH } from "./Font.ts"
import { encodePng } from "./Png.ts"

/** An RGB colour, 0..255 per channel. @category models */
export type Rgb = readonly [number, number, number]

/** A mutable RGB picture, white when created. @category models */
export class Canvas {
  readonly width: number
  readonly height: number
  readonly pixels: Uint8Array

  constructor(width: number, height: number, background: Rgb = [255, 255, 255]) {
    if (!(Number.isInteger(width) && width > 0 && Number.isInteger(height) && height > 0)) {
      throw new RangeError(`Canvas: width and height must be positive integers, got ${width}x${height}`)
    }
    this.width = width
    this.height = height
    this.pixels = new Uint8Array(width * height * 3)
    this.fillRect(0, 0, width, height, background)
  }

  /** Sets one pixel; coordinates outside the canvas are ignored. */
  set(x: number, y: number, color: Rgb): void {
    const xi = Math.round(x)
    const yi = Math.round(y)
    if (xi < 0 || yi < 0 || xi >= this.width || yi >= this.height) return
    const i = (yi * this.width + xi) * 3
    this.pixels[i] = color[0]
    this.pixels[i + 1] = color[1]
    this.pixels[i + 2] = color[2]
  }

  /** Fills the rectangle [x, x + w) x [y, y + h), clipped to the canvas. */
  fillRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    const x0 = Math.max(0, Math.round(x))
    const y0 = Math.max(0, Math.round(y))
    const x1 = Math.min(this.width, Math.round(x + w))
    const y1 = Math.min(this.height, Math.round(y + h))
    for (let yy = y0; yy < y1; yy++) {
      for (let xx = x0; xx < x1; xx++) {
        const i = (yy * this.width + xx) * 3
        this.pixels[i] = color[0]
        this.pixels[i + 1] = color[1]
        this.pixels[i + 2] = color[2]
      }
    }
  }

  /** A line `thickness` pixels wide from (x0, y0) to (x1, y1); `dash` > 0 draws dashes of that length. */
  line(x0: number, y0: number, x1: number, y1: number, color: Rgb, thickness = 1, dash = 0): void {
    const dx = x1 - x0
    const dy = y1 - y0
    const steps = Math.max(1, Math.ceil(Math.max(Math.abs(dx), Math.abs(dy))))
    const half = (thickness - 1) / 2
    for (let s = 0; s <= steps; s++) {
      if (dash > 0 && Math.floor(s / dash) % 2 === 1) continue
      const x = x0 + (dx * s) / steps
      const y = y0 + (dy * s) / steps
      if (thickness <= 1) this.set(x, y, color)
      else this.fillRect(x - half, y - half, thickness, thickness, color)
    }
  }

  /** Draws `text` with its top-left corner at (x, y); `vertical` draws it bottom-to-top. */
  text(x: number, y: number, text: string, color: Rgb, scale = 1, vertical = false): void {
    let cursor = 0
    for (const char of text) {
      const columns = glyph(char)
      for (let cx = 0; cx < GLYPH_WIDTH; cx++) {
        const bits = columns[cx]
        for (let cy = 0; cy < GLYPH_HEIGHT; cy++) {
          if ((bits >> cy) & 1) {
            const gx = cursor + cx * scale
            const gy = cy * scale
            if (vertical) this.fillRect(x + gy, y - gx - scale, scale, scale, color)
            else this.fillRect(x + gx, y + gy, scale, scale, color)
          }
        }
      }
      cursor += (GLYPH_WIDTH + 1) * scale
    }
  }

  /** Encodes the canvas as a PNG file. */
  toPng(): Buffer {
    return encodePng(this.width, this.height, this.pixels)
  }
}

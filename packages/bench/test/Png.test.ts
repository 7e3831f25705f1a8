import { assert, describe, it } from "@effect/vitest"
import { crc32 as zlibCrc32, inflateSync } from "node:zlib"
import { Canvas } from "../src/plot/Canvas.ts"
import { barChart, formatTick, lineChart, niceTicks } from "../src/plot/Chart.ts"
import { glyph, textWidth } from "../src/plot/Font.ts"
import { crc32, encodePng, PNG_SIGNATURE } from "../src/plot/Png.ts"

interface Chunk {
  readonly type: string
  readonly data: Buffer
  readonly crc: number
}

const chunks = (png: Buffer): Array<Chunk> => {
  const out: Array<Chunk> = []
  let offset = 8
  while (offset < png.length) {
    const length = png.readUInt32BE(offset)
    const type = png.toString("latin1", offset + 4, offset + 8)
    out.push({ type, data: png.subarray(offset + 8, offset + 8 + length), crc: png.readUInt32BE(offset + 8 + length) })
    offset += 12 + length
  }
  return out
}

describe("PNG encoder", () => {
  it("crc32 matches zlib's and the standard check value", () => {
    assert.strictEqual(crc32(Buffer.from("123456789")), 0xcbf43926)
    const bytes = Buffer.from("IHDR and some more bytes \u00ff", "latin1")
    assert.strictEqual(crc32(bytes), zlibCrc32(bytes))
  })

  it("writes the signature, IHDR/IDAT/IEND with valid CRCs, and the pixels back", () => {
    const rgb = Uint8Array.from({ length: 3 * 2 * 3 }, (_, i) => (i * 37) % 256)
    const png = encodePng(3, 2, rgb)
    assert.deepStrictEqual([...png.subarray(0, 8)], [...PNG_SIGNATURE])
    const list = chunks(png)
    assert.deepStrictEqual(list.map((c) => c.type), ["IHDR", "IDAT", "IEND"])
    for (const c of list) {
      assert.strictEqual(c.crc, zlibCrc32(Buffer.concat([Buffer.from(c.type, "latin1"), c.data])), `CRC of ${c.type}`)
    }
    const ihdr = list[0].data
    assert.deepStrictEqual([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9], ihdr[12]], [3, 2, 8, 2, 0])
    const raw = inflateSync(list[1].data)
    assert.strictEqual(raw.length, 2 * (1 + 9))
    assert.strictEqual(raw[0], 0)
    assert.deepStrictEqual([...raw.subarray(1, 10)], [...rgb.subarray(0, 9)])
    assert.deepStrictEqual([...raw.subarray(11, 20)], [...rgb.subarray(9, 18)])
  })

  it("rejects a buffer of the wrong size, naming the expected length", () => {
    assert.throws(() => encodePng(2, 2, new Uint8Array(5)), /must hold 12 bytes for 2x2/)
    assert.throws(() => encodePng(0, 2, new Uint8Array(0)), /positive integers/)
  })
})

describe("drawing", () => {
  it("font covers printable ASCII and maps others to ?", () => {
    assert.deepStrictEqual([...glyph("!")], [0x00, 0x00, 0x5f, 0x00, 0x00])
    assert.deepStrictEqual([...glyph("\u00e9")], [...glyph("?")])
    assert.strictEqual(textWidth("abc"), 17)
    assert.strictEqual(textWidth("abc", 2), 34)
  })

  it("canvas draws text pixels and clips outside", () => {
    const c = new Canvas(20, 10)
    c.text(0, 0, "!", [0, 0, 0])
    // "!" has column 2 lit in rows 0..4 and 6.
    const at = (x: number, y: number) => c.pixels[(y * 20 + x) * 3]
    assert.strictEqual(at(2, 0), 0)
    assert.strictEqual(at(2, 5), 255)
    assert.strictEqual(at(2, 6), 0)
    c.set(-1, 50, [0, 0, 0])
    c.fillRect(15, 5, 100, 100, [1, 2, 3])
    assert.strictEqual(c.pixels[(9 * 20 + 19) * 3 + 2], 3)
  })

  it("nice ticks and labels", () => {
    assert.deepStrictEqual(niceTicks(0, 1000, 5), [0, 200, 400, 600, 800, 1000])
    assert.deepStrictEqual(niceTicks(0, 7, 5), [0, 2, 4, 6, 8])
    assert.deepStrictEqual(niceTicks(5, 5), [5, 6, 7, 8, 9, 10])
    assert.deepStrictEqual([formatTick(1500), formatTick(25_000), formatTick(2_000_000), formatTick(0.25)], [
      "1500",
      "25k",
      "2M",
      "0.25"
    ])
  })

  it("charts encode to PNGs of the requested size", () => {
    const line = lineChart({
      title: "t",
      xLabel: "x",
      yLabel: "y",
      series: [{ name: "a", points: [[0, 1], [10, 3]] }],
      width: 300,
      height: 200
    })
    const bar = barChart({
      title: "t",
      yLabel: "y",
      categories: ["a", "b"],
      series: [{ name: "s", values: [1, null] }],
      width: 320,
      height: 180
    })
    for (const [canvas, w, h] of [[line, 300, 200], [bar, 320, 180]] as const) {
      const ihdr = chunks(canvas.toPng())[0].data
      assert.deepStrictEqual([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4)], [w, h])
    }
  })
})

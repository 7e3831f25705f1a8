import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fc from "fast-check"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import {
  bodyTokenBound,
  MEDIA_TOKENS,
  mediaHoldTokens,
  mediaPartTokens,
  MESSAGE_OVERHEAD_TOKENS,
  promptBound
} from "../src/dialect/Tokens.ts"
import type { Model } from "../src/domain/Domain.ts"
import { MAX_NANOS, parseScaled, usdToNanos } from "../src/money/Money.ts"
import { cost, holdFor, isPriced, maxOutputFor, worstCase } from "../src/money/Pricing.ts"

const model = (over: Partial<Model> = {}): Model => ({
  id: "m",
  displayName: "m",
  inputNanosPerMillion: 150_000_000n, // $0.15 / 1M
  outputNanosPerMillion: 600_000_000n, // $0.60 / 1M
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 128_000,
  outputTokenLimit: 16_384,
  ...over
})

/**
 * The rows of the markdown table in docs/billing.md whose header row starts
 * with `header`, as trimmed cells (parenthesised notes dropped).
 */
const docTable = (header: string): Array<Array<string>> => {
  const doc = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "billing.md"), "utf8")
  const lines = doc.split("\n").map((line) => line.trim())
  const start = lines.findIndex((line) => line.startsWith(header))
  assert.isAtLeast(start, 0, `docs/billing.md has a table starting with '${header}'`)
  const rows: Array<Array<string>> = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break
    rows.push(line.slice(1, -1).split("|").map((cell) => cell.trim()))
  }
  assert.isAtLeast(rows.length, 5)
  return rows
}

const usdOrNull = (cell: string): bigint | null => {
  if (cell === "") return null
  const nanos = usdToNanos(cell)
  assert.isDefined(nanos, cell)
  return nanos!
}

const ratioOf = (cell: string): bigint => {
  const micros = parseScaled(cell, 6)
  assert.isDefined(micros, cell)
  return micros!
}

const leadingInt = (cell: string): number => Number(/^\d+/.exec(cell)![0])

const pricedModel = (cells: ReadonlyArray<string>): Model =>
  model({
    inputNanosPerMillion: usdOrNull(cells[0]!),
    cachedInputNanosPerMillion: usdOrNull(cells[1]!),
    outputNanosPerMillion: usdOrNull(cells[2]!),
    perRequestNanos: usdOrNull(cells[3]!)
  })

describe("Pricing", () => {
  it("rounding table: every row of docs/billing.md's table", () => {
    const rows = docTable("| input | cached_input | output | per_request | ratio | prompt tokens |")
    for (const cells of rows) {
      const prompt = leadingInt(cells[5]!)
      const cachedNote = /\((\d+|all) cached\)/.exec(cells[5]!)
      const cached = cachedNote === null ? 0 : cachedNote[1] === "all" ? prompt : Number(cachedNote[1])
      const charged = cost(pricedModel(cells), ratioOf(cells[4]!), {
        promptTokens: prompt,
        completionTokens: leadingInt(cells[6]!),
        cachedTokens: cached
      })
      assert.strictEqual(charged, BigInt(leadingInt(cells[7]!)), cells.join(" | "))
    }
  })

  it("rounding table: exact rational, rounded up once to a nano-dollar", () => {
    const rows: Array<[Partial<Model>, bigint, number, number, number, bigint]> = [
      // price overrides, ratio micros, prompt, completion, cached, expected nanos
      [{}, 1_000_000n, 1_000_000, 0, 0, 150_000_000n],
      [{}, 1_000_000n, 1, 0, 0, 150n], // 0.15e-6 USD = 150 nanos exactly
      [{}, 1_000_000n, 0, 1, 0, 600n],
      [{}, 800_000n, 1, 1, 0, 600n], // (150 + 600) * 0.8 = 600
      [{}, 333_333n, 1, 0, 0, 50n], // 150 * 0.333333 = 49.99995 -> 50
      [{}, 333_333n, 3, 0, 0, 150n], // 450 * 0.333333 = 149.99985 -> 150: rounded once, not per token
      [{}, 1n, 1, 1, 0, 1n], // 750 * 0.000001 -> 1
      [{ inputNanosPerMillion: 1n }, 1_000_000n, 1, 0, 0, 1n], // 1e-6 nanos -> rounds up to 1
      [{ inputNanosPerMillion: 1n }, 1_000_000n, 1_000_000, 0, 0, 1n], // exactly 1
      [{ inputNanosPerMillion: 1n }, 1_000_000n, 1_000_001, 0, 0, 2n],
      [{ cachedInputNanosPerMillion: 75_000_000n }, 1_000_000n, 1000, 0, 1000, 75_000n],
      [{ cachedInputNanosPerMillion: 75_000_000n }, 1_000_000n, 1000, 0, 400, 120_000n],
      [{ cachedInputNanosPerMillion: 75_000_000n }, 1_000_000n, 1000, 0, 5000, 75_000n], // cached beyond prompt counts as the prompt
      [
        { perRequestNanos: 10_000_000n, inputNanosPerMillion: null, outputNanosPerMillion: null },
        1_000_000n,
        500,
        500,
        0,
        10_000_000n
      ],
      [
        { perRequestNanos: 10_000_000n, inputNanosPerMillion: null, outputNanosPerMillion: null },
        1_500_000n,
        0,
        0,
        0,
        15_000_000n
      ],
      [{ perRequestNanos: 1n, inputNanosPerMillion: null, outputNanosPerMillion: null }, 500_000n, 0, 0, 0, 1n], // half a nano -> 1
      [{ free: true }, 1_000_000n, 1000, 1000, 0, 0n],
      [{}, 0n, 1000, 1000, 0, 0n] // ratio 0 (the store accepts it) costs nothing
    ]
    for (const [over, ratio, prompt, completion, cached, expected] of rows) {
      assert.strictEqual(
        cost(model(over), ratio, { promptTokens: prompt, completionTokens: completion, cachedTokens: cached }),
        expected,
        JSON.stringify([ratio.toString(), prompt, completion, cached])
      )
    }
  })

  it("never charges below the exact price nor more than one nano-dollar above it", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 100_000_000_000n }),
        fc.bigInt({ min: 0n, max: 100_000_000_000n }),
        fc.bigInt({ min: 1n, max: 10_000_000n }),
        fc.nat({ max: 2_000_000 }),
        fc.nat({ max: 2_000_000 }),
        (input, output, ratio, prompt, completion) => {
          const charged = cost(model({ inputNanosPerMillion: input, outputNanosPerMillion: output }), ratio, {
            promptTokens: prompt,
            completionTokens: completion
          })
          const exactTimes = (BigInt(prompt) * input + BigInt(completion) * output) * ratio // / 10^12
          const scale = 10n ** 12n
          assert.isTrue(charged * scale >= exactTimes)
          assert.isTrue((charged - 1n) * scale < exactTimes || charged === 0n)
        }
      ),
      { numRuns: 500 }
    )
  })

  it("hold table: every row of docs/billing.md's hold examples", () => {
    const rows = docTable("| input | cached_input | output | per_request | ratio | body bytes |")
    for (const cells of rows) {
      const held = worstCase(pricedModel(cells), ratioOf(cells[4]!), {
        promptTokens: bodyTokenBound(leadingInt(cells[5]!), leadingInt(cells[6]!)),
        outputTokens: leadingInt(cells[7]!),
        choices: leadingInt(cells[8]!)
      })
      assert.strictEqual(held, BigInt(leadingInt(cells[9]!)), cells.join(" | "))
    }
  })

  it("the worst case holds the output once per answer asked for, media at their bound, the prompt at the dearer price", () => {
    const m = model({ inputNanosPerMillion: 1_000_000_000n, outputNanosPerMillion: 2_000_000_000n }) // 1000 / 2000 nanos per token
    const one = worstCase(m, 1_000_000n, { promptTokens: 100, outputTokens: 50 })
    assert.strictEqual(one, 100n * 1000n + 50n * 2000n)
    assert.strictEqual(
      worstCase(m, 1_000_000n, { promptTokens: 100, outputTokens: 50, choices: 3 }),
      100n * 1000n + 3n * 50n * 2000n
    )
    // an image by URL: its bytes in the body are few, its tokens many
    assert.strictEqual(bodyTokenBound(200, 2), 200 + MESSAGE_OVERHEAD_TOKENS + 2 * MEDIA_TOKENS)
    // cached input priced above input (some providers charge cache writes more): the prompt is held at the dearer price
    const dearCache = model({
      inputNanosPerMillion: 1_000_000_000n,
      cachedInputNanosPerMillion: 3_000_000_000n,
      outputNanosPerMillion: 0n
    })
    assert.strictEqual(worstCase(dearCache, 1_000_000n, { promptTokens: 100, outputTokens: 0 }), 300_000n)
    // per_request once per call, whatever n
    const flat = model({ inputNanosPerMillion: null, outputNanosPerMillion: null, perRequestNanos: 10_000_000n })
    assert.strictEqual(worstCase(flat, 1_500_000n, { promptTokens: 100, outputTokens: 50, choices: 4 }), 15_000_000n)
    assert.strictEqual(
      worstCase(model({ free: true }), 1_000_000n, { promptTokens: 100, outputTokens: 50, choices: 4 }),
      0n
    )
  })

  it("the worst case bounds every actual cost within its bounds", () => {
    fc.assert(
      fc.property(
        fc.record({
          input: fc.option(fc.bigInt({ min: 0n, max: 100_000_000_000n }), { nil: null }),
          cachedInput: fc.option(fc.bigInt({ min: 0n, max: 100_000_000_000n }), { nil: null }),
          output: fc.option(fc.bigInt({ min: 0n, max: 100_000_000_000n }), { nil: null }),
          perRequest: fc.option(fc.bigInt({ min: 0n, max: 1_000_000_000n }), { nil: null })
        }),
        fc.bigInt({ min: 0n, max: 10_000_000n }),
        fc.record({
          prompt: fc.nat({ max: 1_000_000 }),
          output: fc.nat({ max: 100_000 }),
          choices: fc.integer({ min: 1, max: 8 })
        }),
        fc.record({
          prompt: fc.double({ min: 0, max: 1, noNaN: true }),
          cached: fc.double({ min: 0, max: 1, noNaN: true }),
          completion: fc.double({ min: 0, max: 1, noNaN: true })
        }),
        (prices, ratio, bounds, share) => {
          const m = model({
            inputNanosPerMillion: prices.input,
            cachedInputNanosPerMillion: prices.cachedInput,
            outputNanosPerMillion: prices.output,
            perRequestNanos: prices.perRequest
          })
          const hold = worstCase(m, ratio, {
            promptTokens: bounds.prompt,
            outputTokens: bounds.output,
            choices: bounds.choices
          })
          // any usage within the bounds: some of the prompt, any part of it cached, up to `output` tokens per choice
          const prompt = Math.floor(bounds.prompt * share.prompt)
          const actual = cost(m, ratio, {
            promptTokens: prompt,
            cachedTokens: Math.floor(prompt * share.cached),
            completionTokens: Math.floor(bounds.output * bounds.choices * share.completion)
          })
          assert.isTrue(actual <= hold, `${actual} <= ${hold}`)
          // and the bound is reached: the whole prompt at the dearer price, every answer at full length
          const full = cost(m, ratio, {
            promptTokens: bounds.prompt,
            cachedTokens: (prices.cachedInput ?? prices.input ?? 0n) > (prices.input ?? 0n) ? bounds.prompt : 0,
            completionTokens: bounds.output * bounds.choices
          })
          assert.strictEqual(full, hold)
        }
      ),
      { numRuns: 500 }
    )
  })

  it.effect("a hold above the largest amount is refused as insufficient balance, not an internal error", () =>
    Effect.gen(function*() {
      // $1 per output token, 16384 output tokens: $16,384 per answer
      const dear = model({ outputNanosPerMillion: 1_000_000n * 1_000_000_000n })
      assert.strictEqual(
        yield* holdFor(dear, 1_000_000n, { promptTokens: 0, outputTokens: 16_384 }),
        16_384n * 1_000_000_000n
      )
      // exactly the largest amount is still held
      const exact = model({ inputNanosPerMillion: null, outputNanosPerMillion: null, perRequestNanos: MAX_NANOS })
      assert.strictEqual(yield* holdFor(exact, 1_000_000n, { promptTokens: 0, outputTokens: 0 }), MAX_NANOS)
      const over = yield* Effect.exit(holdFor(exact, 1_000_001n, { promptTokens: 0, outputTokens: 0 }))
      assert.isTrue(Exit.isFailure(over))
      // a client asking for a million answers
      const many = yield* Effect.flip(
        holdFor(dear, 1_000_000n, { promptTokens: 10, outputTokens: 16_384, choices: 1_000_000 })
      )
      assert.strictEqual(many._tag, "InsufficientBalance")
      assert.include(many.message, "16384000000.0000015 USD") // 1e6 answers x $16,384, plus ten prompt tokens at $0.15 per million
      assert.include(many.message, "1000000000.00 USD")
      assert.include(many.message, "fewer answers")
    }))

  it("charges cache writes at the cache_write price, else at the input price, and holds the prompt at the dearest price", () => {
    // Anthropic's list prices for Claude Sonnet: input $3, cache reads $0.30, cache writes $3.75, output $15 per 1M.
    const sonnet = model({
      inputNanosPerMillion: 3_000_000_000n,
      cachedInputNanosPerMillion: 300_000_000n,
      cacheWriteNanosPerMillion: 3_750_000_000n,
      outputNanosPerMillion: 15_000_000_000n
    })
    // 10 fresh + 1000 read + 20 written prompt tokens, 5 output: 30 + 300 + 75 + 75 = 480 USD per 1M -> 480,000 nano-dollars.
    const usage = { promptTokens: 1030, cachedTokens: 1000, cacheWriteTokens: 20, completionTokens: 5 }
    assert.strictEqual(cost(sonnet, 1_000_000n, usage), 480_000n)
    // Without a cache_write price the writes cost what input costs: 30 + 300 + 60 + 75.
    assert.strictEqual(cost(model({ ...sonnet, cacheWriteNanosPerMillion: null }), 1_000_000n, usage), 465_000n)
    // Reads and writes never count more tokens than the prompt has.
    assert.strictEqual(
      cost(sonnet, 1_000_000n, { promptTokens: 10, cachedTokens: 8, cacheWriteTokens: 8, completionTokens: 0 }),
      9_900n
    )
    // The hold prices the prompt bound at the cache-write price when it is the dearest.
    assert.strictEqual(worstCase(sonnet, 1_000_000n, { promptTokens: 1000, outputTokens: 0 }), 3_750_000n)
  })

  it("never charges a negative amount nor throws, whatever the token counts (negative, fractional, NaN, infinite)", () => {
    const m = model({ cacheWriteNanosPerMillion: 3_750_000_000n })
    // An upstream's -1,000,000 prompt and -5,000,000 completion tokens would have credited $3.15.
    assert.strictEqual(cost(m, 1_000_000n, { promptTokens: -1_000_000, completionTokens: -5_000_000 }), 0n)
    // BigInt(1.5) threw a RangeError: a fraction is priced as the next whole count.
    assert.strictEqual(
      cost(m, 1_000_000n, { promptTokens: 1.5, completionTokens: 2.5 }),
      cost(m, 1_000_000n, { promptTokens: 2, completionTokens: 3 })
    )
    assert.strictEqual(
      cost(m, 1_000_000n, { promptTokens: Number.NaN, completionTokens: Number.POSITIVE_INFINITY }),
      0n
    )
    assert.strictEqual(
      cost(m, 1_000_000n, { promptTokens: 10, completionTokens: 0, cachedTokens: -10 }),
      cost(m, 1_000_000n, { promptTokens: 10, completionTokens: 0 }),
      "a negative cached count does not raise the uncached part above the prompt"
    )
    assert.strictEqual(
      cost(m, 1_000_000n, { promptTokens: 10, completionTokens: 0, cacheWriteTokens: -10 }),
      cost(m, 1_000_000n, { promptTokens: 10, completionTokens: 0 }),
      "a negative cache-write count credits nothing"
    )
    fc.assert(fc.property(
      fc.double(),
      fc.double(),
      fc.option(fc.double(), { nil: undefined }),
      fc.option(fc.double(), { nil: undefined }),
      (prompt, completion, cached, written) => {
        const charged = cost(m, 1_000_000n, {
          promptTokens: prompt,
          completionTokens: completion,
          cachedTokens: cached,
          cacheWriteTokens: written
        })
        return charged >= 0n
      }
    ))
  })

  it("knows which models can be billed", () => {
    assert.isTrue(isPriced(model()))
    assert.isFalse(isPriced(model({ inputNanosPerMillion: null, outputNanosPerMillion: null })))
    assert.isTrue(isPriced(model({ inputNanosPerMillion: null, outputNanosPerMillion: null, free: true })))
  })

  it("caps the held output at the model's limit", () => {
    assert.strictEqual(maxOutputFor(model(), undefined), 16_384)
    assert.strictEqual(maxOutputFor(model(), 100), 100)
    assert.strictEqual(maxOutputFor(model(), 1_000_000), 16_384)
  })

  it("media parts count their kind's figure on the model: set by the operator, else 2,000 for an image and the input token limit for the others", () => {
    const plain = model({ inputTokenLimit: 1_048_576 })
    assert.deepStrictEqual(
      (["image", "audio", "video", "document", "file"] as const).map((kind) => mediaPartTokens(plain, kind)),
      [MEDIA_TOKENS, 1_048_576, 1_048_576, 1_048_576, 1_048_576]
    )
    const set = model({ mediaPartTokens: { image: 25_000, video: 0, document: 3_000 } })
    assert.deepStrictEqual(
      (["image", "audio", "video", "document", "file"] as const).map((kind) => mediaPartTokens(set, kind)),
      [25_000, 128_000, 0, 3_000, 128_000]
    )
    // A figure that is not a count (only code can set one) is the default, never a credit.
    assert.strictEqual(mediaPartTokens(model({ mediaPartTokens: { image: -5 } }), "image"), MEDIA_TOKENS)
    assert.strictEqual(mediaHoldTokens(set, { image: 2, video: 3, document: 1, file: 1 }), 50_000 + 3_000 + 128_000)
    // Counts that are not counts count as none (a fraction rounds up).
    assert.strictEqual(mediaHoldTokens(set, { image: -1, audio: Number.NaN, document: 0.5 }), 3_000)
    // With nothing set and images only, the bound is the one the body scan always gave.
    assert.strictEqual(promptBound(model(), 200, { image: 2 }), bodyTokenBound(200, 2))
    assert.strictEqual(promptBound(model(), 200), bodyTokenBound(200))
    // A hold on a model whose operator set a document at 50,000 tokens: three PDFs by URL, at $1 per million.
    const pdf = model({
      inputNanosPerMillion: 1_000_000_000n,
      outputNanosPerMillion: 0n,
      mediaPartTokens: { document: 50_000 }
    })
    assert.strictEqual(
      worstCase(pdf, 1_000_000n, { promptTokens: promptBound(pdf, 92, { document: 3 }), outputTokens: 0 }),
      (92n + 8n + 150_000n) * 1000n
    )
  })
})

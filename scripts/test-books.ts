/**
 * `pnpm test:books [--runs N] [--seed S]`: the model-based property test of
 * the books (packages/node-http/test/Books.property.test.ts) with more runs
 * than CI gives it: N runs on the embedded store and N / 4 on SQLite (CI: 150
 * and 40), from seed S (default the CI seed, 20020; `--seed random` picks
 * one and prints it). A failure prints the shrunk command sequence and the
 * seed and path that replay it.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const at = args.indexOf(`--${name}`)
  if (at >= 0) return args[at + 1]
  return args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)
}
const unknown = args.filter((arg, i) =>
  arg.startsWith("--") && !/^--(runs|seed)(=|$)/.test(arg) && !(i > 0 && /^--(runs|seed)$/.test(args[i - 1]!))
)
if (unknown.length > 0) {
  console.error(`test:books: unknown option ${unknown.join(", ")}; use --runs N and --seed S (or --seed random)`)
  process.exit(2)
}
const runs = option("runs") ?? "0"
if (!/^\d+$/.test(runs)) {
  console.error(`test:books: --runs takes a whole number, got '${runs}'`)
  process.exit(2)
}
const seedOption = option("seed")
const seed = seedOption === "random" ? String(Math.floor(Math.random() * 2 ** 31)) : seedOption ?? "20020"
if (!/^-?\d+$/.test(seed)) {
  console.error(`test:books: --seed takes a whole number or 'random', got '${seed}'`)
  process.exit(2)
}
console.log(`test:books: ${runs === "0" ? "the CI runs" : `${runs} runs`}, seed ${seed}`)
const root = join(import.meta.dirname, "..")
const result = spawnSync(
  join(root, "node_modules", ".bin", "vitest"),
  ["run", "packages/node-http/test/Books.property.test.ts"],
  { cwd: root, stdio: "inherit", env: { ...process.env, BOOKS_RUNS: runs, BOOKS_SEED: seed } }
)
process.exit(result.status ?? 1)

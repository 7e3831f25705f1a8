/**
 * The clouds' signing and framing run in every runtime the engine's web
 * handler serves: AWS's @smithy signer and codec over WebCrypto, and the
 * Vertex assertion over WebCrypto, under Bun and Deno (`fixtures/runtimes.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { generateKeyPairSync, verify } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)
const pair = generateKeyPairSync("rsa", { modulusLength: 2048 })
const pem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString()

describe("under other runtimes", () => {
  for (const runtime of ["bun", "deno"] as const) {
    it(`${runtime}: signs, frames and asserts as under Node`, async () => {
      const root = join(import.meta.dirname, "..")
      const binary = join(root, "node_modules", ".bin", runtime)
      if (!existsSync(binary)) throw new Error(`${binary} is missing: run pnpm install`)
      const args = runtime === "bun"
        ? ["test/fixtures/runtimes.ts"]
        : ["run", "--allow-env", "--allow-read", "test/fixtures/runtimes.ts"]
      const { stdout } = await run(binary, args, {
        cwd: root,
        env: { ...process.env, MODELGATE_TEST_KEY: pem, NO_COLOR: "1" },
        timeout: 60_000
      })
      const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
        authorization: string
        answer: {
          choices: Array<{ content: Array<{ text: string }>; finishReason: string }>
          usage: { promptTokens: number }
        }
        assertion: string
      }
      assert.match(out.authorization, /Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31$/)
      assert.strictEqual(out.answer.choices[0]!.content[0]!.text, "héllo wörld")
      assert.strictEqual(out.answer.choices[0]!.finishReason, "stop")
      assert.strictEqual(out.answer.usage.promptTokens, 3)
      const [header, claims, signature] = out.assertion.split(".")
      assert.isTrue(
        verify("sha256", Buffer.from(`${header}.${claims}`), pair.publicKey, Buffer.from(signature!, "base64url"))
      )
    }, 90_000)
  }
})

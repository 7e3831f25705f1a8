import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { promisify } from "node:util"
import { type LoadgenConfig, type LoadgenJson, parseLoadgenArgs, UsageError } from "../src/loadgen.ts"
import { checkTargetUrl } from "../src/Loopback.ts"

const parse = (argv: ReadonlyArray<string>, files: Record<string, string> = {}): LoadgenConfig => {
  const config = parseLoadgenArgs(argv, (path) => {
    const text = files[path]
    if (text === undefined) throw new Error("ENOENT: no such file")
    return text
  })
  if (config === "help") throw new Error("unexpected help")
  return config
}

const usageError = (argv: ReadonlyArray<string>): string => {
  try {
    parse(argv)
  } catch (error) {
    assert.instanceOf(error, UsageError)
    return (error as Error).message
  }
  throw new Error(`no usage error for ${argv.join(" ")}`)
}

describe("loadgen arguments", () => {
  it("reads an open loop with headers and a body", () => {
    const c = parse([
      "--url",
      "http://127.0.0.1:8080/v1/chat/completions",
      "--header",
      "Authorization: Bearer sk-1",
      "--header",
      "x-extra:  a: b ",
      "--body",
      "{\"model\":\"m\"}",
      "--rate",
      "250.5",
      "--duration-ms",
      "2000",
      "--stream"
    ])
    assert.deepStrictEqual(c.request, {
      url: "http://127.0.0.1:8080/v1/chat/completions",
      headers: { authorization: "Bearer sk-1", "x-extra": "a: b" },
      body: "{\"model\":\"m\"}",
      stream: true
    })
    assert.deepStrictEqual(c.load, { mode: "open", rate: 250.5, durationMs: 2000 })
    assert.strictEqual(c.allowRemote, false)
    assert.strictEqual(c.json, false)
  })

  it("reads a closed loop and a body file", () => {
    const c = parse([
      "--url",
      "http://localhost:9/x",
      "--body-file",
      "b.json",
      "--concurrency",
      "8",
      "--requests",
      "100",
      "--ramp-ms",
      "50",
      "--json"
    ], {
      "b.json": "{\"contents\":[]}"
    })
    assert.strictEqual(c.request.body, "{\"contents\":[]}")
    assert.deepStrictEqual(c.load, { mode: "closed", concurrency: 8, requests: 100, rampMs: 50 })
    assert.strictEqual(c.json, true)
  })

  it("builds a scenario's request on a base URL, in either dialect", () => {
    const openai = parse([
      "--url",
      "http://127.0.0.1:8080/",
      "--scenario",
      "stream-200",
      "--concurrency",
      "4",
      "--duration-ms",
      "1000"
    ])
    assert.strictEqual(openai.request.url, "http://127.0.0.1:8080/v1/chat/completions")
    assert.strictEqual(openai.request.stream, true)
    assert.strictEqual(JSON.parse(openai.request.body ?? "").model, "bench-chunks-200x20")
    const gemini = parse([
      "--url",
      "http://127.0.0.1:8080/gw",
      "--scenario",
      "chat-small",
      "--dialect",
      "gemini",
      "--rate",
      "10",
      "--duration-ms",
      "100"
    ])
    assert.strictEqual(gemini.request.url, "http://127.0.0.1:8080/gw/v1beta/models/gemini-2.5-flash:generateContent")
    assert.deepStrictEqual(JSON.parse(gemini.request.body ?? ""), {
      contents: [{ role: "user", parts: [{ text: "Say hello." }] }]
    })
  })

  it("names what is wrong", () => {
    const base = ["--url", "http://127.0.0.1:1/"]
    assert.match(usageError([]), /--url is required/)
    assert.match(usageError([...base]), /give --rate N --duration-ms D .* or --concurrency C/)
    assert.match(usageError([...base, "--rate", "10", "--concurrency", "2"]), /not both/)
    assert.match(usageError([...base, "--rate", "10"]), /--rate needs --duration-ms/)
    assert.match(
      usageError([...base, "--rate", "0", "--duration-ms", "10"]),
      /--rate must be a positive number, got "0"/
    )
    assert.match(
      usageError([...base, "--concurrency", "1.5", "--requests", "1"]),
      /--concurrency must be a positive integer/
    )
    assert.match(usageError([...base, "--concurrency", "2"]), /needs --requests N, --duration-ms D, or both/)
    assert.match(
      usageError([...base, "--rate", "1", "--duration-ms", "1", "--requests", "5"]),
      /--requests is for the closed loop/
    )
    assert.match(usageError([...base, "--body", "{", "--rate", "1", "--duration-ms", "1"]), /--body is not valid JSON/)
    assert.match(
      usageError([...base, "--body-file", "missing.json", "--rate", "1", "--duration-ms", "1"]),
      /--body-file: cannot read "missing.json"/
    )
    assert.match(
      usageError([...base, "--body", "{}", "--scenario", "chat-small", "--rate", "1", "--duration-ms", "1"]),
      /at most one of/
    )
    assert.match(
      usageError([...base, "--scenario", "nope", "--rate", "1", "--duration-ms", "1"]),
      /unknown scenario "nope"/
    )
    assert.match(
      usageError([...base, "--scenario", "chat-small", "--dialect", "anthropic", "--rate", "1", "--duration-ms", "1"]),
      /--dialect must be one of openai, gemini/
    )
    assert.match(
      usageError([...base, "--header", "novalue", "--rate", "1", "--duration-ms", "1"]),
      /--header must look like "Name: value"/
    )
    assert.match(usageError([...base, "--bogus"]), /Unknown option '--bogus'/)
    assert.match(
      usageError([...base, "--rate", "1", "--duration-ms", "1", "--pid", "999999999"]),
      /--pid: no process 999999999 on this machine/
    )
    assert.strictEqual(
      parse([...base, "--rate", "1", "--duration-ms", "1", "--pid", String(process.pid)]).pid,
      process.pid
    )
  })

  it("refuses another machine unless --allow-remote, then takes http and https", () => {
    const load = ["--rate", "1", "--duration-ms", "1"]
    assert.match(
      usageError(["--url", "https://gateway.example.com/v1/chat/completions", ...load]),
      /not a loopback address.*--allow-remote/
    )
    const remote = parse(["--url", "https://gateway.example.com/v1/chat/completions", "--allow-remote", ...load])
    assert.strictEqual(remote.allowRemote, true)
    assert.throws(
      () => checkTargetUrl("ftp://example.com/", "--url", { allowRemote: true }),
      /only http:\/\/ and https:\/\//
    )
    assert.throws(() => checkTargetUrl("http://10.1.2.3/", "--url"), /not a loopback address/)
    assert.strictEqual(checkTargetUrl("http://10.1.2.3/a", "--url", { allowRemote: true }).pathname, "/a")
  })
})

describe("loadgen command", () => {
  it("measures a server and prints JSON or the summary", async () => {
    const seen: Array<{ method: string | undefined; auth: string | undefined; body: string }> = []
    const server = http.createServer((req, res) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => (body += chunk))
      req.on("end", () => {
        seen.push({ method: req.method, auth: req.headers.authorization, body })
        if (seen.length % 10 === 0) {
          res.writeHead(429, { "content-type": "application/json" })
          res.end("{}")
          return
        }
        res.writeHead(200, { "content-type": "application/json" })
        res.end("{\"ok\":true}")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`
    const cli = join(import.meta.dirname, "../src/loadgen.ts")
    const run = promisify(execFile)
    try {
      // This process serves the calls: --pid reads its own accounting.
      const json = await run(process.execPath, [
        cli,
        "--url",
        url,
        "--header",
        "authorization: Bearer k",
        "--body",
        "{\"a\":1}",
        "--concurrency",
        "4",
        "--requests",
        "50",
        "--pid",
        String(process.pid),
        "--json"
      ])
      const r = JSON.parse(json.stdout) as LoadgenJson
      assert.strictEqual(r.mode, "closed")
      assert.strictEqual(r.sent, 50)
      assert.strictEqual(r.ok, 45)
      assert.deepStrictEqual(r.errors, { http_429: 5 })
      assert.strictEqual(r.latency.count, 45)
      assert.strictEqual(r.latencyHistogram.count, 45)
      assert.isAtMost(r.latency.p50Us, r.latency.maxUs)
      assert.deepStrictEqual(seen[0], { method: "POST", auth: "Bearer k", body: "{\"a\":1}" })
      assert.strictEqual(r.process?.pid, process.pid)
      assert.isAtLeast(r.process?.cpuMs ?? -1, 0)
      assert.isAbove(r.process?.rssStartBytes ?? 0, 0)
      assert.isAtLeast(r.process?.peakRssBytes ?? 0, r.process?.rssEndBytes ?? 1)

      const text = await run(process.execPath, [cli, "--url", url, "--rate", "100", "--duration-ms", "200"])
      assert.match(text.stdout, /^open loop, 100 calls\/s -> /)
      assert.match(text.stdout, /sent 20, ok 18, failed 2, dropped 0/)
      assert.match(text.stdout, /latency +p50 .* p90 .* p99 .* max /)
      assert.match(text.stdout, /errors +http_429: 2/)
      assert.notMatch(text.stdout, /process/)

      const bad = await run(process.execPath, [cli, "--url", "http://192.0.2.1/", "--rate", "1", "--duration-ms", "1"])
        .then(
          () => null,
          (error: { code?: number; stderr?: string }) => error
        )
      assert.strictEqual(bad?.code, 2)
      assert.match(bad?.stderr ?? "", /pass --allow-remote/)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

import { Effect, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import * as Server from "../src/Server.ts"
import { resolveSettings } from "../src/Settings.ts"
const file = JSON.parse(readFileSync("/tmp/prof/gw.yaml", "utf8")); rmSync("/tmp/prof/mem.db", { force: true }); file.database = "sqlite:/tmp/prof/mem.db"
const settings = await Effect.runPromise(resolveSettings(file, {}, { consoleDir: null, source: "alloc" }))
const runtime = ManagedRuntime.make(Server.layer(settings, file))
await runtime.runPromise(Effect.service(HttpServer.HttpServer))
const session = new Session(); session.connect()
process.on("SIGUSR1", async () => {
  await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  console.log("sampling")
})
process.on("SIGUSR2", async () => {
  const { profile } = await session.post("HeapProfiler.stopSampling")
  writeFileSync("/tmp/prof/alloc.heapprofile", JSON.stringify(profile)); console.log("written")
})
console.log("ready")

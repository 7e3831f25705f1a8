/**
 * The usage journal failing (a full disk) while PostgreSQL is down and back:
 * the journal never holds back writes to a database that answers, is retried
 * with a growing pause (no tight loop), never holds half an entry, and what
 * can go nowhere stays in memory, bounded, with priced calls refused before
 * the bound. The journal is on a 64 KiB tmpfs, filled up (needs root to
 * mount; elsewhere a journal directory under a regular file, ENOTDIR, stands
 * in for it and the full-disk part is reported as skipped). PostgreSQL is
 * reached through an in-test proxy that cuts it off (MODELGATE_TEST_POSTGRES).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Database from "../src/Database.ts"
import { migrate } from "../src/Migrations.ts"
import * as UsageJournal from "../src/UsageJournal.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { makePostgres, postgresUrl, type TestDatabase } from "./harness.ts"
import { type PgProxy, startPgProxy, targetOf } from "./support/PgProxy.ts"
import { build, record } from "./support/Writers.ts"

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

const until = async (what: string, check: () => Promise<boolean> | boolean, withinMs: number) => {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(25)
  }
}

/** A 64 KiB tmpfs, or undefined where none can be mounted (not root, no CAP_SYS_ADMIN). */
const mountTiny = (): string | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const dir = mkdtempSync(join(tmpdir(), "modelgate-full-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", dir], { stdio: "ignore" })
    return dir
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return undefined
  }
}

/** Writes a filler file until the filesystem is full. */
const fill = (dir: string) => {
  const chunk = Buffer.alloc(1024, 120)
  for (let i = 0;; i++) {
    try {
      writeFileSync(join(dir, `filler-${i}`), chunk)
    } catch {
      return
    }
  }
}

const emptyOut = (dir: string) => {
  for (const name of readdirSync(dir)) if (name.startsWith("filler-")) rmSync(join(dir, name))
}

describe.skipIf(postgresUrl === undefined)(
  "a usage journal that fails (set MODELGATE_TEST_POSTGRES to run)",
  () => {
    let db: TestDatabase
    let proxy: PgProxy
    let tiny: string | undefined
    let stand: string
    beforeAll(async () => {
      db = await makePostgres(postgresUrl!)
      proxy = await startPgProxy(targetOf(db.url))
      const direct = await build(Database.layer(db.url, { maxConnections: 1 }).pipe(Layer.orDie), SqlClient.SqlClient)
      await Effect.runPromise(Effect.provideService(migrate, SqlClient.SqlClient, direct.service))
      await direct.close()
      tiny = mountTiny()
      stand = mkdtempSync(join(tmpdir(), "modelgate-notdir-"))
      if (tiny === undefined) {
        console.warn(
          "SKIPPED: the full-disk journal (cannot mount a tmpfs here); a journal under a regular file stands in"
        )
      }
    })
    afterAll(async () => {
      await proxy.close()
      await db.cleanup()
      if (tiny !== undefined) {
        execFileSync("umount", [tiny])
        rmSync(tiny, { recursive: true, force: true })
      }
      rmSync(stand, { recursive: true, force: true })
    })

    const writerOn = async (dir: string, name: string, maxMemoryEntries = 10_000) => {
      const client = await build(
        Database.layer(proxy.urlFor(db.url), { maxConnections: 4 }).pipe(Layer.orDie),
        SqlClient.SqlClient
      )
      const writer = await build(
        UsageWriter.layerWith({ flushIntervalMs: 50, flushTimeoutMs: 1_000, journal: { dir, name }, maxMemoryEntries })
          .pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, client.service))),
        UsageWriter
      )
      const count = async (prefix: string) => {
        try {
          const rows = await Effect.runPromise(
            client.service<{ n: unknown }>`SELECT COUNT(*) AS n FROM usage_records WHERE request_id LIKE ${
              prefix + "%"
            }`
          )
          return Number(rows[0]!.n)
        } catch {
          return -1
        }
      }
      return {
        writer: writer.service,
        count,
        close: async () => {
          await writer.close()
          await client.close()
        }
      }
    }

    it(
      "a full journal disk: the database that answers again takes everything, the journal first; no tight retry loop; no half entry",
      async () => {
        const dir = tiny !== undefined ? join(tiny, "journal") : join(stand, "file-not-dir", "journal")
        if (tiny === undefined) writeFileSync(join(stand, "file-not-dir"), "")
        const node = await writerOn(dir, "full")
        try {
          for (let i = 0; i < 5; i++) await Effect.runPromise(node.writer.record(record(`full-up-${i}`)))
          await until("the first records", async () => (await node.count("full-up-")) === 5, 5_000)
          proxy.setDown(true)
          if (tiny !== undefined) {
            // Down, with room on the disk: the entries go to the journal.
            for (let i = 0; i < 20; i++) await Effect.runPromise(node.writer.record(record(`full-a-${i}`)))
            await until(
              "the journal",
              async () =>
                (await Effect.runPromise(node.writer.state)).memoryEntries === 0 &&
                (await Effect.runPromise(node.writer.pending)) === 20,
              5_000
            )
            fill(tiny)
          }
          // The disk is full (or the directory cannot be made): the next entries stay in memory.
          for (let i = 0; i < 30; i++) await Effect.runPromise(node.writer.record(record(`full-b-${i}`)))
          const before = node.writer.metrics.journalFailures.series[0]?.value ?? 0
          await sleep(2_000)
          const state = await Effect.runPromise(node.writer.state)
          assert.isTrue(state.journalFailing, "the journal is known to fail")
          assert.strictEqual(state.memoryEntries, 30)
          assert.isTrue(state.admitting, "far from the bound: calls are still admitted")
          const tries = (node.writer.metrics.journalFailures.series[0]?.value ?? 0) - before
          assert.isAtMost(tries, 8, `the journal was tried ${tries} times in 2 s (flush every 50 ms): a growing pause`)
          console.log(`full journal disk: ${tries} tries of the journal in 2 s (a tight loop: 40)`)
          if (tiny !== undefined) {
            const files = readdirSync(dir).map((name) => join(dir, name))
            for (const file of files) {
              const contents = await Effect.runPromise(UsageJournal.read(file))
              assert.strictEqual(contents.unreadable, 0, "a write cut short by the full disk left no half line")
              assert.strictEqual(contents.entries.length, 20)
            }
          }
          // The database is back, the disk still full: everything is written, the journal's entries first.
          const healed = Date.now()
          proxy.setDown(false)
          await until(
            "every entry in the database",
            async () =>
              (await node.count("full-b-")) === 30 && (tiny === undefined || (await node.count("full-a-")) === 20),
            10_000
          )
          console.log(`full journal disk: everything written ${Date.now() - healed} ms after the database came back`)
          assert.strictEqual(await Effect.runPromise(node.writer.pending), 0)
          if (tiny !== undefined) assert.isFalse(readdirSync(dir).some((name) => name.startsWith("usage-")))
        } finally {
          proxy.setDown(false)
          if (tiny !== undefined) emptyOut(tiny)
          await node.close()
        }
      },
      60_000
    )

    it(
      "what can go nowhere stays in memory, bounded: priced calls are refused before the bound, and admitted again once written",
      async () => {
        const base = tiny ?? stand
        const dir = join(base, "bounded-file", "journal")
        // A regular file where the journal's directory should be: every append fails.
        writeFileSync(join(base, "bounded-file"), "")
        const node = await writerOn(dir, "bounded", 20)
        try {
          proxy.setDown(true)
          for (let i = 0; i < 17; i++) await Effect.runPromise(node.writer.record(record(`bound-${i}`)))
          await sleep(300)
          assert.isTrue(node.writer.admitting(), "17 of 20: still admitting")
          await Effect.runPromise(node.writer.record(record("bound-17")))
          assert.isFalse(node.writer.admitting(), "18 of 20 (90%): priced calls are refused")
          assert.isFalse((await Effect.runPromise(node.writer.state)).admitting)
          proxy.setDown(false)
          await until("admitting again", () => node.writer.admitting(), 10_000)
          await until("every entry in the database", async () => (await node.count("bound-")) === 18, 10_000)
        } finally {
          proxy.setDown(false)
          rmSync(join(base, "bounded-file"), { force: true })
          await node.close()
        }
        assert.isFalse(existsSync(dir))
      },
      60_000
    )
  }
)

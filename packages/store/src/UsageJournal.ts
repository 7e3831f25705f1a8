/**
 * The usage writer's journal: where queued usage records, charges and lease
 * releases go when the database cannot take them, so they are never lost
 * while the node's disk works.
 *
 * One append-only file per writer (`usage-<name>-<start time>-<pid>.jsonl` in
 * the journal directory), one JSON entry per line, each append followed by an
 * fsync. The writer appends to it while the database is unreachable and at
 * shutdown (what the last flush could not write within the grace period), and
 * replays it, in order, once the database answers; a file left by an earlier
 * run (any node id) is replayed by the next writer started on the same
 * directory, or by `modelgate usage replay FILE` on any node. Replaying is
 * safe twice: records and charges are keyed by request id and written once,
 * a lease already released is not released again.
 *
 * @since 0.1.0
 */
import { Domain } from "@modelgate/core"
import type { UsageLog } from "@modelgate/core"
import { Effect, Result, Schema } from "effect"
import { readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { mkdir, open } from "node:fs/promises"
import { basename, join } from "node:path"
import type { Charge } from "./internal/LeaseSql.ts"

const Attempt = Schema.Struct({
  channel: Schema.String,
  keyHint: Schema.String,
  status: Schema.NullOr(Schema.Number),
  errorCode: Schema.NullOr(Schema.String),
  // Absent in journals written before attempts kept their message.
  errorMessage: Schema.optionalKey(Schema.NullOr(Schema.String)),
  durationMs: Schema.Number
})

const UsageRecord = Schema.Struct({
  createdAt: Schema.Number,
  requestId: Schema.String,
  userId: Schema.String,
  keyId: Schema.String,
  model: Schema.String,
  upstreamModel: Schema.String,
  channel: Schema.String,
  dialectIn: Domain.Dialect,
  dialectOut: Domain.WireDialect,
  stream: Schema.Boolean,
  promptTokens: Schema.Number,
  completionTokens: Schema.Number,
  cachedTokens: Schema.Number,
  cacheWriteTokens: Schema.optionalKey(Schema.Number),
  // Absent in journals written before reasoning tokens and error messages were kept.
  reasoningTokens: Schema.optionalKey(Schema.Number),
  usageReported: Schema.Boolean,
  costNanos: Schema.BigIntFromString,
  latencyMs: Schema.Number,
  ttfbMs: Schema.NullOr(Schema.Number),
  status: Schema.Number,
  errorCode: Schema.NullOr(Schema.String),
  errorMessage: Schema.optionalKey(Schema.NullOr(Schema.String)),
  attempts: Schema.Number,
  attemptLog: Schema.Array(Attempt),
  note: Schema.optionalKey(Schema.NullOr(Schema.String))
})

const LeaseCharge = Schema.Struct({
  leaseId: Schema.NullOr(Schema.String),
  userId: Schema.String,
  keyId: Schema.String,
  requestId: Schema.String,
  chargedNanos: Schema.BigIntFromString,
  shortfallNanos: Schema.BigIntFromString,
  at: Schema.Number
})

/**
 * What the usage writer queues: a usage record, a call's charge against a
 * balance lease, or the end of a lease (after the charges queued before it).
 *
 * @category models
 */
export const Entry = Schema.Union([
  Schema.TaggedStruct("Usage", { record: UsageRecord }),
  Schema.TaggedStruct("Charge", { charge: LeaseCharge }),
  Schema.TaggedStruct("Release", { leaseId: Schema.String })
])

/** @category models */
export type Entry =
  | { readonly _tag: "Usage"; readonly record: UsageLog.UsageRecord }
  | { readonly _tag: "Charge"; readonly charge: Charge }
  | { readonly _tag: "Release"; readonly leaseId: string }

const Line = Schema.fromJsonString(Entry)
const encodeLine = Schema.encodeSync(Line)
const decodeLine = Schema.decodeUnknownResult(Line)

/**
 * The journal could not be written or read (a full or read-only disk).
 *
 * @category errors
 */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  message: Schema.String
}) {}

const failure = (what: string) => (cause: unknown) =>
  new JournalError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * A file's entries, in order, and how many lines could not be read (a line
 * cut short by a crash while it was written).
 *
 * @category models
 */
export interface Contents {
  readonly entries: ReadonlyArray<Entry>
  readonly unreadable: number
}

/**
 * Reads a journal file.
 *
 * @category reading
 */
export const read = (path: string): Effect.Effect<Contents, JournalError> =>
  Effect.try({
    try: () => {
      const entries: Array<Entry> = []
      let unreadable = 0
      for (const line of readFileSync(path, "utf8").split("\n")) {
        if (line.length === 0) continue
        const decoded = decodeLine(line)
        if (Result.isSuccess(decoded)) entries.push(decoded.success as Entry)
        else unreadable++
      }
      return { entries, unreadable }
    },
    catch: failure(`Cannot read the usage journal ${path}`)
  })

/**
 * A writer's journal file.
 *
 * @category models
 */
export interface Journal {
  readonly path: string
  /** Appends the entries and waits until they are on disk (fsync). */
  readonly append: (entries: ReadonlyArray<Entry>) => Effect.Effect<void, JournalError>
  /** The entries appended and not yet removed, in order. */
  readonly read: Effect.Effect<Contents, JournalError>
  /** Removes the file (its entries are in the database). */
  readonly remove: Effect.Effect<void, JournalError>
}

/**
 * The journal of a writer named `name` (the node id) in `dir`. The file is
 * created (and `dir`, mode 0700) at the first append.
 *
 * @category constructors
 */
export const make = (dir: string, name: string, startedAt: number): Journal => {
  // The process id tells a journal still being written (by another process on this directory) from one left behind.
  const path = join(dir, `usage-${name.replace(/[^A-Za-z0-9._-]/g, "_")}-${startedAt}-${process.pid}.jsonl`)
  return {
    path,
    // Asynchronous: a slow or failing disk never blocks the process's calls. A write that fails
    // halfway (a full disk) is cut back to the last whole line, so no entry is half written.
    append: (entries) =>
      Effect.tryPromise({
        try: async () => {
          if (entries.length === 0) return
          await mkdir(dir, { recursive: true, mode: 0o700 })
          const file = await open(path, "a", 0o600)
          try {
            const size = (await file.stat()).size
            try {
              // A full disk first takes part of a write without an error (a short write): the rest is
              // written until it is all there or the disk says no.
              const data = Buffer.from(entries.map((entry) => encodeLine(entry as typeof Entry.Type)).join("\n") + "\n")
              let offset = 0
              while (offset < data.length) {
                const { bytesWritten } = await file.write(data, offset, data.length - offset)
                if (bytesWritten <= 0) throw new Error(`no room left (${data.length - offset} bytes not written)`)
                offset += bytesWritten
              }
              await file.sync()
            } catch (error) {
              await file.truncate(size).catch(() => undefined)
              throw error
            }
          } finally {
            await file.close()
          }
        },
        catch: failure(`Cannot write the usage journal ${path}`)
      }),
    read: Effect.suspend(() => read(path)),
    remove: Effect.try({
      try: () => rmSync(path, { force: true }),
      catch: failure(`Cannot remove the usage journal ${path}`)
    })
  }
}

/**
 * The journal files in `dir` that no running writer owns (left by earlier
 * runs, of any node), oldest first, except `own`.
 *
 * @category reading
 */
export const leftBehind = (dir: string, own: string): ReadonlyArray<string> => {
  let names: Array<string>
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const files: Array<{ readonly name: string; readonly startedAt: number }> = []
  for (const name of names) {
    const match = /^usage-.*-(\d+)-(\d+)\.jsonl(?:\.replaying-(\d+))?$/.exec(name)
    if (match === null || name === basename(own)) continue
    // A file a running process still writes, or replays right now, is its; one whose process died is left behind.
    const writer = Number(match[2])
    if (match[3] === undefined && writer !== process.pid && isAlive(writer)) continue
    if (match[3] !== undefined && isAlive(Number(match[3]))) continue
    files.push({ name, startedAt: Number(match[1]) })
  }
  return files.sort((a, b) => a.startedAt - b.startedAt).map((file) => join(dir, file.name))
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Takes a left-behind file for replaying (renames it, so two writers starting
 * on one directory never replay the same file at once); `undefined` when
 * another one took it first. `give back` restores it when the replay failed.
 *
 * @category reading
 */
export const claim = (path: string): { readonly path: string; readonly giveBack: () => void } | undefined => {
  const original = path.replace(/\.replaying-\d+$/, "")
  const claimed = `${original}.replaying-${process.pid}`
  try {
    renameSync(path, claimed)
  } catch {
    return undefined
  }
  return {
    path: claimed,
    giveBack: () => {
      try {
        renameSync(claimed, original)
      } catch {
        // Already gone.
      }
    }
  }
}

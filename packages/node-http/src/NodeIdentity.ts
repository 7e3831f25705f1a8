/**
 * The default `node_id`: the name a gateway process gives its balance leases,
 * its database holds and its heartbeat, stable across restarts.
 *
 * Why stable: at start a node releases whatever an earlier run under its own
 * id left in the database (leases and holds of calls a crash cut). With an id
 * that changed on every start (`hostname-pid`, the old default), a crashed
 * run's leases waited for the other nodes to declare it dead, and a lease
 * whose creation's answer was lost could be reclaimed by nobody by name.
 *
 * What: the host name and a random suffix, created once and kept in the file
 * `node-id` in the node's state directory (beside its key file: next to a
 * SQLite database, else `data/`), so the same installation keeps its id
 * across restarts and reboots, and two hosts with the same name (cloned
 * machines) still differ. Two processes started on one host with one state
 * directory must not share an id (each would release the other's leases when
 * it starts): a process holds its id with a lock file (`node-id.lock`, its
 * pid inside) while it runs, and a second one takes the next free slot
 * (`<id>-2`, with `node-id-2.lock`), also stable across restarts. A lock left
 * by a process that died is taken over. Set `node_id` to name nodes yourself.
 *
 * When the directory cannot be written (a read-only file system), the id
 * falls back to `hostname-pid`, with a warning.
 *
 * @since 0.1.0
 */
import { Effect, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"

/** How many processes may share one state directory on one host. @category constants */
export const MAX_SLOTS = 64

const isAlive = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The id kept in `dir/node-id`, created on first use. */
const baseId = (dir: string): string => {
  const file = join(dir, "node-id")
  try {
    const stored = readFileSync(file, "utf8").trim()
    if (stored.length > 0) return stored
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const name = hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 48) || "node"
  const created = `${name}-${randomBytes(3).toString("hex")}`
  try {
    writeFileSync(file, `${created}\n`, { mode: 0o600, flag: "wx" })
    return created
  } catch (error) {
    // Another process created it a moment ago: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    return readFileSync(file, "utf8").trim()
  }
}

/** The lock files this process holds (a lock naming this pid but not held here is a dead process's whose pid was reused). */
const held = new Set<string>()

/** Takes the lock of a slot: true when this process now holds it. */
const tryLock = (lock: string): boolean => {
  if (held.has(lock)) return false
  try {
    writeFileSync(lock, `${process.pid}\n`, { mode: 0o600, flag: "wx" })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
  let holder: number
  try {
    holder = Number(readFileSync(lock, "utf8").trim())
  } catch {
    return false
  }
  if (holder !== process.pid && isAlive(holder)) return false
  // Left by a process that died: take it over.
  try {
    unlinkSync(lock)
  } catch {
    // Someone else took it over first.
  }
  try {
    writeFileSync(lock, `${process.pid}\n`, { mode: 0o600, flag: "wx" })
    return true
  } catch {
    return false
  }
}

/**
 * Claims this process's stable node id in `dir` for the life of the scope
 * (the lock file is removed when the scope closes).
 *
 * @category identity
 */
export const claim = (dir: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend((): Effect.Effect<Claimed> => {
      try {
        const base = baseId(dir)
        for (let slot = 1; slot <= MAX_SLOTS; slot++) {
          const lock = join(dir, slot === 1 ? "node-id.lock" : `node-id-${slot}.lock`)
          if (tryLock(lock)) {
            held.add(lock)
            return Effect.succeed({ id: slot === 1 ? base : `${base}-${slot}`, lock })
          }
        }
        return fallback(`more than ${MAX_SLOTS} processes use ${dir}`)
      } catch (error) {
        return fallback(`${dir} cannot be used: ${error instanceof Error ? error.message : String(error)}`)
      }
    }),
    (claimed) =>
      Effect.sync(() => {
        if (claimed.lock === null) return
        held.delete(claimed.lock)
        try {
          unlinkSync(claimed.lock)
        } catch {
          // Already gone.
        }
      })
  ).pipe(Effect.map((claimed) => claimed.id))

interface Claimed {
  readonly id: string
  /** The lock file this process holds, removed when it stops; null for the fallback id. */
  readonly lock: string | null
}

const fallback = (why: string): Effect.Effect<Claimed> => {
  const id = `${hostname()}-${process.pid}`
  return Effect.as(
    Effect.logWarning(`no stable node id (${why}); this process is ${id} until it stops. Set node_id to name it.`),
    { id, lock: null }
  )
}

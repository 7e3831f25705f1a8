/**
 * A private PostgreSQL cluster for the tests of a real database fault: initdb
 * into a temp directory, `postgres` on a free port of 127.0.0.1 (trust auth,
 * fsync off: safe against a process crash, since the kernel keeps what was
 * written; not `synchronous_commit=off`, whose acknowledged commits a crash
 * loses), and on demand frozen (SIGSTOP to the postmaster and every
 * backend), thawed, crashed (SIGKILL) and started again on the same data
 * directory and port.
 *
 * PostgreSQL refuses to run as root: as root the cluster belongs to the
 * `postgres` OS user and its programs run through `runuser -u postgres --`.
 * Without the binaries (or, as root, without that user or runuser) the tests
 * that need it are skipped and say so (`privatePostgresMissing`).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** MODELGATE_TEST_POSTGRES_BIN names the directory of initdb and postgres; else the newest of Debian's. */
const postgresBin = (): string | undefined => {
  const given = process.env["MODELGATE_TEST_POSTGRES_BIN"]
  if (given !== undefined) return existsSync(join(given, "postgres")) ? given : undefined
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length === 0 ? undefined : join(root, versions[0]!, "bin")
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0

/** The uid and gid of the `postgres` OS user, if there is one. */
const postgresUser = (): { readonly uid: number; readonly gid: number } | undefined => {
  try {
    const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
    if (line === undefined) return undefined
    const [, , uid, gid] = line.split(":")
    return { uid: Number(uid), gid: Number(gid) }
  } catch {
    return undefined
  }
}

const runuser = "/usr/sbin/runuser"

const bin = postgresBin()

/** Why the private-cluster tests cannot run here, or undefined when they can. */
export const privatePostgresMissing: string | undefined = bin === undefined
  ? "no PostgreSQL server binaries in MODELGATE_TEST_POSTGRES_BIN or /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)"
  : isRoot && postgresUser() === undefined
  ? "running as root and there is no `postgres` OS user to run PostgreSQL as"
  : isRoot && !existsSync(runuser)
  ? `running as root and ${runuser} is missing`
  : undefined

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

/** The program and arguments that run `program` as the cluster's owner. */
const asOwner = (program: string, args: ReadonlyArray<string>): [string, Array<string>] =>
  isRoot ? [runuser, ["-u", "postgres", "--", program, ...args]] : [program, [...args]]

/** The pids whose parent is `pid` (from /proc). */
const childrenOf = (pid: number): Array<number> => {
  const children: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      if (ppid === pid) children.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return children
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    // A zombie still answers signal 0; it is dead for our purposes.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

const signal = (pid: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(pid, sig)
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface PrivatePostgres {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string
  /** The postmaster's pid (from postmaster.pid). */
  readonly postmaster: () => number
  /** SIGSTOP to the postmaster, then to every backend: connections stay open and nothing answers. */
  readonly freeze: () => void
  /** SIGCONT to the postmaster and its backends. */
  readonly thaw: () => void
  /** SIGKILL to the postmaster (a crash), then to whatever backend outlives it; waits until all are gone. */
  readonly crash: () => Promise<void>
  /** Starts the server again on the same data directory and port (crash recovery runs) and waits until it answers. */
  readonly start: () => Promise<void>
  /** What the server wrote to stderr so far. */
  readonly log: () => string
  /** Kills everything and removes the directory. */
  readonly close: () => Promise<void>
}

/** Starts a private cluster; throws when `privatePostgresMissing` says it cannot. */
export const startPrivatePostgres = async (): Promise<PrivatePostgres> => {
  if (privatePostgresMissing !== undefined) throw new Error(privatePostgresMissing)
  const binDir = bin!
  const root = mkdtempSync(join(tmpdir(), "modelgate-pg-"))
  const data = join(root, "data")
  if (isRoot) {
    const user = postgresUser()!
    chownSync(root, user.uid, user.gid)
  }
  const port = await freePort()
  let output = ""
  let server: ChildProcess | undefined
  let pid = 0
  let frozen: Array<number> = []
  try {
    const [program, args] = asOwner(join(binDir, "initdb"), [
      "-D",
      data,
      "-U",
      "postgres",
      "--auth=trust",
      "-E",
      "UTF8",
      "--no-sync"
    ])
    execFileSync(program, args, { stdio: "pipe" })
  } catch (error) {
    rmSync(root, { recursive: true, force: true })
    throw error
  }

  const ready = async (): Promise<boolean> => {
    const [program, args] = asOwner(join(binDir, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port), "-t", "1"])
    return new Promise((resolve) => {
      const child = spawn(program, args, { stdio: "ignore" })
      child.on("exit", (code) => resolve(code === 0))
      child.on("error", () => resolve(false))
    })
  }

  const start = async (): Promise<void> => {
    const [program, args] = asOwner(join(binDir, "postgres"), [
      "-D",
      data,
      "-p",
      String(port),
      "-h",
      "127.0.0.1",
      "-k",
      root,
      "-c",
      "fsync=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=60",
      "-c",
      "shared_buffers=32MB"
    ])
    const child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"] })
    child.stderr!.on("data", (d) => output += d)
    server = child
    const deadline = Date.now() + 30_000
    while (!(await ready())) {
      if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}: ${output}`)
      if (Date.now() > deadline) throw new Error(`postgres did not answer on port ${port}: ${output}`)
      await sleep(100)
    }
    pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0])
  }

  const everyProcess = (): Array<number> => [pid, ...childrenOf(pid)]

  /**
   * runuser (as root) stops itself when its child stops, and waits for a SIGCONT
   * before it reaps the child again: a postmaster it does not reap stays a zombie
   * whose pid blocks the next start ("lock file postmaster.pid already exists").
   */
  const continueRunuser = (): void => {
    if (isRoot && server?.pid !== undefined) signal(server.pid, "SIGCONT")
  }

  const crash = async (): Promise<void> => {
    const backends = childrenOf(pid)
    signal(pid, "SIGKILL")
    continueRunuser()
    for (const backend of frozen) signal(backend, "SIGCONT")
    frozen = []
    // Backends notice their postmaster's death and exit; whatever is left after a second is killed.
    const deadline = Date.now() + 1_000
    while (backends.some(alive) && Date.now() < deadline) await sleep(25)
    for (const backend of backends) signal(backend, "SIGKILL")
    const last = Date.now() + 5_000
    while ([pid, ...backends].some(alive) && Date.now() < last) await sleep(25)
    // runuser (as root) ends with its child.
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      await Promise.race([new Promise((resolve) => server!.once("exit", resolve)), sleep(2_000)])
    }
  }

  try {
    await start()
  } catch (error) {
    rmSync(root, { recursive: true, force: true })
    throw error
  }

  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    postmaster: () => pid,
    freeze: () => {
      // The postmaster first, so it starts no backend meanwhile.
      signal(pid, "SIGSTOP")
      frozen = everyProcess()
      for (const p of frozen) signal(p, "SIGSTOP")
    },
    thaw: () => {
      for (const p of [...frozen].reverse()) signal(p, "SIGCONT")
      signal(pid, "SIGCONT")
      continueRunuser()
      frozen = []
    },
    crash,
    start,
    log: () => output,
    close: async () => {
      try {
        if (pid !== 0) {
          for (const p of everyProcess()) signal(p, "SIGCONT")
          await crash()
        }
      } finally {
        rmSync(root, { recursive: true, force: true })
      }
    }
  }
}

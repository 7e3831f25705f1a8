/**
 * Where the demos find the gateway and a free port: the `modelgate`
 * executable as production runs it (`packages/node-http/dist/modelgate.mjs`,
 * which `pnpm build` makes) when it is at least as new as every source it was
 * built from, or else node-http's sources (never a stale bundle).
 *
 * @since 0.1.0
 */
import { existsSync, readdirSync, statSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const packages = fileURLToPath(new URL("../../", import.meta.url))
const bundle = join(packages, "node-http", "dist", "modelgate.mjs")
const sources = join(packages, "node-http", "src", "bin.ts")

/** The newest modification time of the TypeScript sources under `dir`. */
const newest = (dir: string): number => {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) latest = Math.max(latest, newest(path))
    else if (entry.name.endsWith(".ts")) latest = Math.max(latest, statSync(path).mtimeMs)
  }
  return latest
}

/** Whether the bundle was built after the last change to any package's sources. */
const fresh = (): boolean => {
  if (!existsSync(bundle)) return false
  const built = statSync(bundle).mtimeMs
  for (const pkg of readdirSync(packages)) {
    const src = join(packages, pkg, "src")
    if (existsSync(src) && newest(src) > built) return false
  }
  return true
}

/** The `modelgate` executable: the bundle when it is built and current, else the sources. @category paths */
export const binary: string = fresh() ? bundle : sources

/** A port nothing listens on right now. @category ports */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

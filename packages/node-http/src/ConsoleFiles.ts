/**
 * Serving the web console's built files (packages/console/dist) under
 * `/console/`. Files are read once at start and served from memory; hashed
 * assets are cacheable for a year, `index.html` never. Client-side routes under
 * `/console/` get `index.html`; nothing outside `/console/` ever does, so an API
 * path can never be answered with the console's HTML.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { readdirSync, readFileSync } from "node:fs"
import { extname, join, relative, sep } from "node:path"

const types: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}

/**
 * The console's Content-Security-Policy.
 *
 * @category headers
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

interface File {
  readonly body: Uint8Array
  readonly type: string
  readonly immutable: boolean
}

const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]
  )

/**
 * Loads the built console from `dir` and returns the handler for console paths.
 *
 * @category serving
 */
export const make = (dir: string): (path: string) => Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const files = new Map<string, File>()
  for (const path of walk(dir)) {
    const key = `/console/${relative(dir, path).split(sep).join("/")}`
    files.set(key, {
      body: readFileSync(path),
      type: types[extname(path)] ?? "application/octet-stream",
      immutable: key.startsWith("/console/assets/")
    })
  }
  const index = files.get("/console/index.html")
  return (path) =>
    Effect.sync(() => {
      if (path === "/" || path === "/console") {
        return HttpServerResponse.empty({ status: 302, headers: { location: "/console/" } })
      }
      const file = files.get(path) ?? (extname(path) === "" ? index : undefined)
      if (file === undefined) {
        return HttpServerResponse.text(`No console file at ${path}.\n`, { status: 404 })
      }
      return HttpServerResponse.uint8Array(file.body, {
        contentType: file.type,
        headers: {
          "cache-control": file.immutable ? "public, max-age=31536000, immutable" : "no-cache",
          "x-content-type-options": "nosniff",
          "content-security-policy": CONTENT_SECURITY_POLICY,
          "referrer-policy": "same-origin",
          ...(file === index ? { "x-frame-options": "DENY" } : {})
        }
      })
    })
}

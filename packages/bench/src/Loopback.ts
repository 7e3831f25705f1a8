/**
 * The benchmark's safety rule: traffic goes to this machine only. Every URL
 * the load generator, the floor proxy or the runner is given passes through
 * `assertLoopback` first, which accepts 127.0.0.1 (the whole 127.0.0.0/8
 * block), `localhost` and `[::1]`, and throws for anything else.
 *
 * The one exception is explicit: the standalone load generator
 * (`loadgen.ts --allow-remote`) may measure another machine's gateway, and
 * passes `{ allowRemote: true }` to `checkTargetUrl`, which then accepts any
 * http or https URL. The full benchmark run never does.
 *
 * @since 0.1.0
 */

const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/

/** True when `hostname` (as `URL.hostname` spells it) is a loopback address. @category guards */
export const isLoopbackHost = (hostname: string): boolean =>
  LOOPBACK_V4.test(hostname) || hostname === "localhost" || hostname === "[::1]" || hostname === "::1"

/**
 * Parses `url` and returns it, or throws naming `what` and the offending host
 * when it is not an http URL on a loopback address.
 *
 * @category guards
 */
export const assertLoopback = (url: string, what: string): URL => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Error(`${what}: "${url}" is not a valid URL`)
  }
  if (!isLoopbackHost(parsed.hostname)) {
    throw new Error(
      `${what}: host "${parsed.hostname}" is not a loopback address; the benchmark only sends traffic to 127.0.0.1`
    )
  }
  if (parsed.protocol !== "http:") {
    throw new Error(`${what}: only http:// URLs are supported, got "${parsed.protocol}" in "${url}"`)
  }
  return parsed
}

/** What `checkTargetUrl` accepts. @category models */
export interface UrlPolicy {
  /** Accept any http:// or https:// host, not only loopback (default false). */
  readonly allowRemote?: boolean
}

/**
 * Parses a load target's URL: loopback http only (as `assertLoopback`),
 * unless `policy.allowRemote`, which accepts any http or https URL.
 *
 * @category guards
 */
export const checkTargetUrl = (url: string, what: string, policy: UrlPolicy = {}): URL => {
  if (policy.allowRemote !== true) return assertLoopback(url, what)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Error(`${what}: "${url}" is not a valid URL`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`${what}: only http:// and https:// URLs are supported, got "${parsed.protocol}" in "${url}"`)
  }
  return parsed
}

/** Parse a listen address: "PORT", ":PORT", "HOST:PORT" or "[IPv6]:PORT". */
export const parseListenAddress = (value: string): { readonly host: string; readonly port: number } => {
  const text = value.trim()
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(text) ?? /^()()(\d+)$/.exec(text)
  if (match === null) throw new Error(`invalid listen address "${value}" (expected HOST:PORT)`)
  const port = Number(match[3])
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port in "${value}"`)
  const host = match[1] ?? match[2]
  return { host: host === undefined || host === "" ? "127.0.0.1" : host, port }
}

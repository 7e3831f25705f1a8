/** Small fetch/SSE helpers shared by the fake-upstream tests. */

export const postJson = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

/** OpenAI-style `data:` events (separated by a blank line), payload strings in order. */
export const dataEvents = (text: string, separator = "\n\n"): Array<string> =>
  text
    .split(separator)
    .filter((block) => block.length > 0)
    .map((block) => {
      if (!block.startsWith("data: ")) throw new Error(`not a data event: ${JSON.stringify(block.slice(0, 80))}`)
      return block.slice(6)
    })

/** Anthropic-style events: `event: X\ndata: {...}`. */
export const namedEvents = (text: string): Array<{ event: string; data: any }> =>
  text
    .split("\n\n")
    .filter((block) => block.length > 0)
    .map((block) => {
      const match = /^event: (\S+)\ndata: (.*)$/s.exec(block)
      if (match === null) throw new Error(`bad event block: ${JSON.stringify(block)}`)
      return { event: match[1], data: JSON.parse(match[2]) }
    })

/** Read a body to the end, returning what arrived and the error that ended it, if any. */
export const readAll = async (res: Response): Promise<{ text: string; error: unknown }> => {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { text, error: undefined }
      text += decoder.decode(value, { stream: true })
    }
  } catch (error) {
    return { text, error }
  }
}

/** Read until `predicate(text)` holds; then check that nothing else arrives within `quietMs`. */
export const readUntilQuiet = async (
  res: Response,
  predicate: (text: string) => boolean,
  quietMs: number
): Promise<{ text: string; quiet: boolean }> => {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  while (!predicate(text)) {
    const { done, value } = await reader.read()
    if (done) return { text, quiet: false }
    text += decoder.decode(value, { stream: true })
  }
  const timeout = new Promise<"quiet">((resolve) => setTimeout(() => resolve("quiet"), quietMs))
  const next = await Promise.race([reader.read().then(() => "data" as const, () => "error" as const), timeout])
  await reader.cancel().catch(() => undefined)
  return { text, quiet: next === "quiet" }
}

export const sum = (xs: ReadonlyArray<number>): number => xs.reduce((a, b) => a + b, 0)

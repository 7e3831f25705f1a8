/**
 * Rendering components inside the console's providers, with `fetch`
 * answered by a table of routes (so forms and tables talk to a fake API).
 */
import { render } from "@testing-library/react"
import type { UserEvent } from "@testing-library/user-event"
import type { ReactNode } from "react"
import { MemoryRouter } from "react-router"
import { vi } from "vitest"
import type { Language } from "../src/lib/i18n.tsx"
import { Providers } from "../src/Providers.tsx"

/** One recorded request. */
export interface Seen {
  readonly method: string
  readonly url: string
  readonly body: unknown
  readonly headers: Record<string, string>
}

/** A route answer: status, JSON body, extra headers. */
export type Answer = { readonly status?: number; readonly body: unknown; readonly headers?: Record<string, string> }

/**
 * Replaces `fetch` with a router over `routes` ("METHOD /path" → answer or a
 * function of the request); returns the list of requests seen.
 */
export const fakeApi = (routes: Record<string, Answer | ((seen: Seen) => Answer)>): Array<Seen> => {
  const seen: Array<Seen> = []
  vi.stubGlobal("fetch", async (input: string | URL, init: RequestInit = {}) => {
    const method = init.method ?? "GET"
    const full = new URL(String(input), "http://console.test")
    const url = `${full.pathname}${full.search}`
    const text = typeof init.body === "string"
      ? init.body
      : ArrayBuffer.isView(init.body)
      ? new TextDecoder().decode(init.body as Uint8Array)
      : undefined
    const request: Seen = {
      method,
      url,
      body: text === undefined || text === "" ? undefined : JSON.parse(text),
      headers: Object.fromEntries(new Headers(init.headers as HeadersInit | undefined))
    }
    seen.push(request)
    const route = routes[`${method} ${full.pathname}`]
    const answer = route === undefined
      ? {
        status: 404,
        body: {
          error: { message: `no fake for ${method} ${full.pathname}`, type: "not_found_error", param: null, code: null }
        }
      }
      : typeof route === "function"
      ? route(request)
      : route
    return new Response(JSON.stringify(answer.body), {
      status: answer.status ?? 200,
      headers: { "content-type": "application/json", ...answer.headers }
    })
  })
  return seen
}

/**
 * Puts `text` into `field` as a person pasting it does: a click (the cursor
 * at the end of what is there), then one paste. For values whose keystrokes
 * are not what a test is about: typed key by key, each key re-renders the
 * whole form (the channel form takes about 200 ms a key on a loaded
 * machine), which took the channel form's tests to their timeout.
 */
export const fill = async (user: UserEvent, field: HTMLElement, text: string): Promise<void> => {
  await user.click(field)
  await user.paste(text)
}

/** Renders inside the providers and a router. */
export const renderWithProviders = (
  ui: ReactNode,
  options: { readonly language?: Language; readonly path?: string } = {}
) =>
  render(
    <Providers language={options.language ?? "en"}>
      <MemoryRouter initialEntries={[options.path ?? "/"]}>{ui}</MemoryRouter>
    </Providers>
  )

/** A signed-in session answer. */
export const session = (role: "user" | "admin" = "user") => ({
  body: {
    user: { id: "usr_1", name: "alice", role, balance: "12.50" },
    csrfToken: "csrf-123",
    expiresAt: Date.now() + 3_600_000
  }
})

/** A refusal in the API's error envelope. */
export const refusal = (
  status: number,
  code: string | null,
  message: string,
  param: string | null = null,
  headers: Record<string, string> = {}
): Answer => ({ status, headers, body: { error: { message, type: "invalid_request_error", param, code } } })

/** A page of a list endpoint. */
export const page = (data: ReadonlyArray<unknown>, nextCursor: string | null = null): Answer => ({
  body: { data, nextCursor }
})

/** The query parameters of a recorded request. */
export const queryOf = (request: Seen): Record<string, string> =>
  Object.fromEntries(new URL(request.url, "http://console.test").searchParams)

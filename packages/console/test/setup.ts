/**
 * jsdom gaps Mantine needs (matchMedia, ResizeObserver, scrollIntoView, and
 * `document.fonts`, which autosized textareas watch), and cleanup between
 * tests: the rendered trees, the notifications, whose store is global (a
 * test's "Saved" notices would otherwise fill the next test's visible slots
 * and queue the notice it looks for), the stubbed `fetch` of `fakeApi`, and
 * the CSRF token a test set.
 */
import { notifications } from "@mantine/notifications"
import { cleanup } from "@testing-library/react"
import { afterEach, vi } from "vitest"
import { setCsrfToken } from "../src/lib/api.ts"

afterEach(() => {
  cleanup()
  notifications.clean()
  vi.unstubAllGlobals()
  setCsrfToken(null)
  // What the console keeps in the browser (kept Test results, the language) never leaks into the next test.
  localStorage.clear()
})

Object.defineProperty(window, "matchMedia", {
  writable: true,
  value: (query: string) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false
  })
})

class ResizeObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
}
globalThis.ResizeObserver ??= ResizeObserverStub as unknown as typeof ResizeObserver
Element.prototype.scrollIntoView ??= function() {}
window.HTMLElement.prototype.scrollIntoView ??= function() {}

if (!("fonts" in document)) {
  Object.defineProperty(document, "fonts", {
    value: { ready: Promise.resolve(), status: "loaded", addEventListener: () => {}, removeEventListener: () => {} }
  })
}

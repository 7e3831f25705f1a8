/**
 * The secret of the last API key created in this tab, so the "Connect a
 * client" page can fill it into the settings it shows. Kept in memory only:
 * never written to storage, gone on reload or sign-out (a key's secret is
 * shown once, and the server keeps only its hash).
 *
 * @since 0.1.0
 */
import { useSyncExternalStore } from "react"

/** A key created in this tab: its name and secret. @category models */
export interface NewKey {
  readonly name: string
  readonly secret: string
}

let current: NewKey | undefined
const listeners = new Set<() => void>()

/** Remembers the key just created (or forgets it with `undefined`). @category store */
export const rememberNewKey = (key: NewKey | undefined): void => {
  current = key
  for (const listener of listeners) listener()
}

const subscribe = (listener: () => void) => {
  listeners.add(listener)
  return () => {
    listeners.delete(listener)
  }
}

/** The key created last in this tab, if any. @category hooks */
export const useNewKey = (): NewKey | undefined => useSyncExternalStore(subscribe, () => current)

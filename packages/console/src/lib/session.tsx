/**
 * The signed-in user, as React context: loaded from `GET /api/auth/session`,
 * set by sign-in, cleared by sign-out. It keeps the CSRF token in the API
 * client so every state-changing call carries it. The balance in the header
 * comes from here: pages that read a fresher balance (the dashboard) put it
 * in with `useSyncBalance`, pages that read fresh usage invalidate it, and it
 * is read again when the window regains focus (calls made from other apps
 * spend too).
 *
 * @since 0.1.0
 */
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo } from "react"
import { ApiFailure, call, type Contract, setCsrfToken } from "./api.ts"
import { rememberNewKey } from "./newKey.ts"

/** What the session context holds. @category models */
export interface SessionState {
  readonly status: "loading" | "signed-out" | "signed-in" | "error"
  readonly session: Contract.SessionInfo | undefined
  /** Stores a session just returned by sign-in. */
  readonly signedIn: (session: Contract.SessionInfo) => void
  readonly signOut: () => Promise<void>
}

const SessionContext = createContext<SessionState | undefined>(undefined)

/** The session query's key. @category queries */
export const sessionKey = ["session"] as const

/** Provides the session to the app. @category components */
export function SessionProvider({ children }: { readonly children: ReactNode }) {
  const client = useQueryClient()
  const query = useQuery({
    queryKey: sessionKey,
    queryFn: async () => {
      try {
        const session = await call((api) => api.session.session())
        setCsrfToken(session.csrfToken)
        return session
      } catch (error) {
        if (error instanceof ApiFailure && error.status === 401) {
          setCsrfToken(null)
          return null
        }
        throw error
      }
    },
    retry: false,
    staleTime: 60_000,
    refetchOnWindowFocus: "always"
  })
  const signedIn = useCallback((session: Contract.SessionInfo) => {
    setCsrfToken(session.csrfToken)
    client.setQueryData(sessionKey, session)
  }, [client])
  const signOut = useCallback(async () => {
    try {
      await call((api) => api.session.logout())
    } finally {
      setCsrfToken(null)
      rememberNewKey(undefined)
      client.clear()
      client.setQueryData(sessionKey, null)
    }
  }, [client])
  const value = useMemo<SessionState>(() => ({
    status: query.isPending ? "loading" : query.isError ? "error" : query.data ? "signed-in" : "signed-out",
    session: query.data ?? undefined,
    signedIn,
    signOut
  }), [query.isPending, query.isError, query.data, signedIn, signOut])
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>
}

/** The session context. @category hooks */
export const useSession = (): SessionState => {
  const value = useContext(SessionContext)
  if (value === undefined) throw new Error("useSession must be used inside <SessionProvider>")
  return value
}

/**
 * Puts a balance just read elsewhere (the dashboard's) into the session, so
 * the header shows the same amount as the page.
 *
 * @category hooks
 */
export const useSyncBalance = (balance: string | undefined): void => {
  const client = useQueryClient()
  useEffect(() => {
    if (balance === undefined) return
    client.setQueryData<Contract.SessionInfo | null>(
      sessionKey,
      (current) =>
        current != null && current.user.balance !== balance
          ? { ...current, user: { ...current.user, balance } }
          : current
    )
  }, [balance, client])
}

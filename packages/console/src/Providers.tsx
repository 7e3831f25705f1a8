/**
 * Every provider the console needs, in one component (also used by the
 * component tests).
 *
 * @since 0.1.0
 */
import { Badge, createTheme, MantineProvider } from "@mantine/core"
import { Notifications } from "@mantine/notifications"
import { QueryClient, QueryClientProvider } from "@tanstack/react-query"
import { type ReactNode, useState } from "react"
import notices from "./components/Notices.module.css"
import { ApiFailure } from "./lib/api.ts"
import { I18nProvider, type Language } from "./lib/i18n.tsx"
import { SessionProvider } from "./lib/session.tsx"

/** The console's theme. @category theme */
export const theme = createTheme({
  primaryColor: "indigo",
  defaultRadius: "md",
  fontFamily:
    "Inter, ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Roboto, 'PingFang SC', 'Microsoft YaHei', sans-serif",
  fontFamilyMonospace: "'JetBrains Mono', ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
  headings: { fontWeight: "700" },
  // Dialogs and menus appear without animation for people who ask their system for less motion.
  respectReducedMotion: true,
  components: {
    // Badges hold model ids, group and user names, which are case-sensitive: show them as they are, not upper-cased.
    Badge: Badge.extend({ defaultProps: { tt: "none" } })
  }
})

/** A query client that does not retry refusals (4xx), only network and server failures. @category queries */
export const makeQueryClient = () =>
  new QueryClient({
    defaultOptions: {
      queries: {
        retry: (count, error) =>
          !(error instanceof ApiFailure && error.status >= 400 && error.status < 500) && count < 2,
        refetchOnWindowFocus: false
      }
    }
  })

/** The providers. @category components */
export function Providers({ children, language, client }: {
  readonly children: ReactNode
  readonly language?: Language
  readonly client?: QueryClient
}) {
  const [queryClient] = useState(() => client ?? makeQueryClient())
  return (
    <MantineProvider theme={theme} defaultColorScheme="light">
      {/* Below the header (60 px), so a notice never covers the language, theme or user menu. */}
      <Notifications position="top-right" classNames={notices} />
      <QueryClientProvider client={queryClient}>
        <I18nProvider {...(language === undefined ? {} : { language })}>
          <SessionProvider>{children}</SessionProvider>
        </I18nProvider>
      </QueryClientProvider>
    </MantineProvider>
  )
}

/**
 * Routes: the sign-in page when signed out; otherwise the frame with the
 * user's pages and, for admins, the administration pages. A user who opens an
 * admin address sees a refusal, not the page.
 *
 * @since 0.1.0
 */
import { Button, Center, Stack, Text } from "@mantine/core"
import { IconLock } from "@tabler/icons-react"
import type { ReactNode } from "react"
import { Link, Route, Routes } from "react-router"
import { Layout } from "./components/Layout.tsx"
import { EmptyState, ErrorState, Loading } from "./components/States.tsx"
import { useI18n } from "./lib/i18n.tsx"
import { useSession } from "./lib/session.tsx"
import { AdminChannelsPage } from "./pages/admin/Channels.tsx"
import { AdminCodesPage } from "./pages/admin/Codes.tsx"
import { AdminGroupsPage } from "./pages/admin/Groups.tsx"
import { AdminModelsPage } from "./pages/admin/Models.tsx"
import { AdminOverviewPage } from "./pages/admin/Overview.tsx"
import { AdminUserPage, AdminUsersPage } from "./pages/admin/Users.tsx"
import { ConnectPage } from "./pages/Connect.tsx"
import { DashboardPage } from "./pages/Dashboard.tsx"
import { KeysPage } from "./pages/Keys.tsx"
import { LoginPage } from "./pages/Login.tsx"
import { ModelsPage } from "./pages/Models.tsx"
import { PlaygroundPage } from "./pages/Playground.tsx"
import { RequestsPage } from "./pages/Requests.tsx"
import { UsagePage } from "./pages/Usage.tsx"

function AdminOnly({ children }: { readonly children: ReactNode }) {
  const { t } = useI18n()
  const { session } = useSession()
  if (session?.user.role !== "admin") {
    return (
      <EmptyState
        icon={<IconLock size={28} />}
        title="403"
        hint={t("common.forbidden")}
        action={<Button component={Link} to="/" variant="light">{t("common.backHome")}</Button>}
      />
    )
  }
  return <>{children}</>
}

function NotFound() {
  const { t } = useI18n()
  return (
    <EmptyState
      title="404"
      hint={t("common.notFound")}
      action={<Button component={Link} to="/" variant="light">{t("common.backHome")}</Button>}
    />
  )
}

/** The application. @category components */
export function App() {
  const { status } = useSession()
  if (status === "loading") {
    return (
      <Center mih="100vh">
        <Loading />
      </Center>
    )
  }
  if (status === "error") {
    return (
      <Center mih="100vh" p="md">
        <Stack maw={480}>
          <ErrorStateReload />
        </Stack>
      </Center>
    )
  }
  if (status === "signed-out") return <LoginPage />
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route index element={<DashboardPage />} />
        <Route path="keys" element={<KeysPage />} />
        <Route path="models" element={<ModelsPage />} />
        <Route path="connect" element={<ConnectPage />} />
        <Route path="playground" element={<PlaygroundPage />} />
        <Route path="requests" element={<RequestsPage />} />
        <Route path="usage" element={<UsagePage />} />
        <Route
          path="admin/users"
          element={
            <AdminOnly>
              <AdminUsersPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/users/:id"
          element={
            <AdminOnly>
              <AdminUserPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/groups"
          element={
            <AdminOnly>
              <AdminGroupsPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/channels"
          element={
            <AdminOnly>
              <AdminChannelsPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/models"
          element={
            <AdminOnly>
              <AdminModelsPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/codes"
          element={
            <AdminOnly>
              <AdminCodesPage />
            </AdminOnly>
          }
        />
        <Route
          path="admin/usage"
          element={
            <AdminOnly>
              <AdminOverviewPage />
            </AdminOnly>
          }
        />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  )
}

function ErrorStateReload() {
  const { t } = useI18n()
  return (
    <>
      <ErrorState error={new Error(t("common.network"))} onRetry={() => globalThis.location.reload()} />
      <Text size="xs" c="dimmed" ta="center">modelgate</Text>
    </>
  )
}

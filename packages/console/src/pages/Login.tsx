/**
 * The sign-in page.
 *
 * @since 0.1.0
 */
import {
  Alert,
  Button,
  Center,
  Divider,
  Group,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  ThemeIcon,
  Title
} from "@mantine/core"
import { IconAlertTriangle, IconBolt, IconLogin } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import { LanguageSwitch } from "../components/Layout.tsx"
import { errorMessage } from "../components/States.tsx"
import { call } from "../lib/api.ts"
import { Contract } from "../lib/contract.ts"
import { useI18n } from "../lib/i18n.tsx"
import { useSession } from "../lib/session.tsx"
import { useForm } from "../lib/useForm.ts"

/** Why single sign-on sent the browser back here (`?sso_error=`), once. */
const ssoErrorOf = (): string | undefined => {
  const params = new URLSearchParams(globalThis.location?.search ?? "")
  const error = params.get("sso_error")
  return error === null || error.length === 0 ? undefined : error.slice(0, 1_000)
}

/** The sign-in form, and the single sign-on button when the gateway has one. @category pages */
export function LoginPage() {
  const { t } = useI18n()
  const { signedIn } = useSession()
  const methods = useQuery({
    queryKey: ["auth-methods"],
    queryFn: () => call((api) => api.sso.methods()),
    retry: false,
    staleTime: Infinity
  })
  const ssoError = ssoErrorOf()
  const password = methods.data?.password ?? true
  const sso = methods.data?.sso ?? null
  const form = useForm({
    initial: { username: "", password: "" },
    schema: Contract.LoginRequest,
    toRequest: (v) => v,
    onSubmit: async (body) => signedIn(await call((api) => api.session.login({ payload: body })))
  })
  return (
    <Center
      mih="100vh"
      p="md"
      style={{
        background:
          "linear-gradient(135deg, var(--mantine-color-indigo-light) 0%, var(--mantine-color-cyan-light) 100%)"
      }}
    >
      <Stack w="100%" maw={400} gap="lg">
        <Group justify="space-between">
          <Group gap="sm">
            <ThemeIcon size={40} radius="md" variant="gradient" gradient={{ from: "indigo", to: "cyan", deg: 135 }}>
              <IconBolt />
            </ThemeIcon>
            <Text fw={800} size="xl">modelgate</Text>
          </Group>
          <LanguageSwitch />
        </Group>
        <Paper withBorder shadow="md" p="xl" radius="lg">
          <form onSubmit={(e) => void form.submit(e)} noValidate>
            <Stack>
              <div>
                <Title order={3}>{t("login.title")}</Title>
                <Text c="dimmed" size="sm">{t("login.subtitle")}</Text>
              </div>
              {form.formError !== undefined && (
                <Alert color="red" variant="light" icon={<IconAlertTriangle />} title={t("login.failed")} role="alert">
                  {errorMessage(form.formError, t)}
                </Alert>
              )}
              {ssoError !== undefined && (
                <Alert
                  color="red"
                  variant="light"
                  icon={<IconAlertTriangle />}
                  title={t("login.ssoFailed")}
                  role="alert"
                  data-testid="sso-error"
                >
                  {ssoError}
                </Alert>
              )}
              {sso !== null && (
                <Button
                  component="a"
                  href={sso.startUrl}
                  variant={password ? "default" : "filled"}
                  leftSection={<IconLogin size={18} />}
                  fullWidth
                  size="md"
                >
                  {t("login.sso", { name: sso.name })}
                </Button>
              )}
              {sso !== null && password && <Divider label={t("login.or")} labelPosition="center" />}
              {password && (
                <>
                  <TextInput
                    label={t("login.username")}
                    autoComplete="username"
                    autoFocus
                    name="username"
                    {...form.field("username")}
                  />
                  <PasswordInput
                    label={t("login.password")}
                    autoComplete="current-password"
                    name="password"
                    {...form.field("password")}
                  />
                  <Button type="submit" loading={form.submitting} fullWidth size="md">{t("login.submit")}</Button>
                </>
              )}
            </Stack>
          </form>
        </Paper>
      </Stack>
    </Center>
  )
}

/**
 * Loading, empty and error states, the same on every page.
 *
 * @since 0.1.0
 */
import { Alert, Button, Center, Loader, Stack, Text, ThemeIcon, Title } from "@mantine/core"
import { IconAlertTriangle, IconInbox } from "@tabler/icons-react"
import type { ReactNode } from "react"
import { errorText } from "../lib/errors.ts"
import { type Translate, useI18n } from "../lib/i18n.tsx"

/** A centred spinner with a label. @category components */
export function Loading() {
  const { t } = useI18n()
  return (
    <Center py="xl" data-testid="loading">
      <Stack align="center" gap="xs">
        <Loader type="dots" />
        <Text c="dimmed" size="sm">{t("common.loading")}</Text>
      </Stack>
    </Center>
  )
}

/** The message of an error for people, in the console's language. @category helpers */
export const errorMessage = (error: unknown, t: Translate): string => errorText(error, t)

/** An error with a retry button. @category components */
export function ErrorState({ error, onRetry }: { readonly error: unknown; readonly onRetry?: () => void }) {
  const { t } = useI18n()
  return (
    <Alert color="red" variant="light" icon={<IconAlertTriangle />} title={t("common.error")} role="alert">
      <Stack gap="sm" align="flex-start">
        <Text size="sm">{errorMessage(error, t)}</Text>
        {onRetry && <Button size="xs" variant="light" color="red" onClick={onRetry}>{t("common.retry")}</Button>}
      </Stack>
    </Alert>
  )
}

/** Nothing to show yet, and what to do about it. @category components */
export function EmptyState(
  { title, hint, action, icon }: {
    readonly title: string
    readonly hint?: string
    readonly action?: ReactNode
    readonly icon?: ReactNode
  }
) {
  return (
    <Center py={48} data-testid="empty">
      <Stack align="center" gap="xs" maw={420} ta="center">
        <ThemeIcon size={56} radius="xl" variant="light">{icon ?? <IconInbox size={28} />}</ThemeIcon>
        <Title order={4}>{title}</Title>
        {hint && <Text c="dimmed" size="sm">{hint}</Text>}
        {action}
      </Stack>
    </Center>
  )
}

/**
 * Renders a query's three states: loading, error (with retry) and data.
 *
 * @category components
 */
export function QueryState<A>({ query, children }: {
  readonly query: {
    readonly isPending: boolean
    readonly error: unknown
    readonly data: A | undefined
    readonly refetch: () => unknown
  }
  readonly children: (data: A) => ReactNode
}) {
  if (query.isPending) return <Loading />
  if (query.error) return <ErrorState error={query.error} onRetry={() => void query.refetch()} />
  return <>{children(query.data as A)}</>
}

/**
 * Small shared pieces: page headers, copyable values and code blocks, stat
 * cards, confirmation dialogs.
 *
 * @since 0.1.0
 */
import {
  ActionIcon,
  Alert,
  Box,
  Button,
  Code,
  CopyButton,
  Group,
  Modal,
  Paper,
  Stack,
  Text,
  Title,
  Tooltip
} from "@mantine/core"
import { IconCheck, IconCopy } from "@tabler/icons-react"
import { type ReactNode, useState } from "react"
import { useI18n } from "../lib/i18n.tsx"
import { errorMessage } from "./States.tsx"

/** A page title with an optional subtitle and actions on the right. @category components */
export function PageHeader(
  { title, subtitle, actions }: { readonly title: string; readonly subtitle?: string; readonly actions?: ReactNode }
) {
  return (
    <Group justify="space-between" align="flex-start" mb="lg" wrap="wrap" gap="sm">
      <Stack gap={4}>
        <Title order={2}>{title}</Title>
        {subtitle && <Text c="dimmed" size="sm" maw={640}>{subtitle}</Text>}
      </Stack>
      {actions && <Group gap="xs">{actions}</Group>}
    </Group>
  )
}

/** A copy-to-clipboard icon button. @category components */
export function CopyIcon({ value, label }: { readonly value: string; readonly label?: string }) {
  const { t } = useI18n()
  return (
    <CopyButton value={value} timeout={1500}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? t("common.copied") : (label ?? t("common.copy"))} withArrow>
          <ActionIcon
            variant="subtle"
            color={copied ? "teal" : "gray"}
            onClick={copy}
            aria-label={label ?? t("common.copy")}
          >
            {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
          </ActionIcon>
        </Tooltip>
      )}
    </CopyButton>
  )
}

/** A labelled value in monospace with a copy button. @category components */
export function CopyField(
  { label, value, testId }: { readonly label: string; readonly value: string; readonly testId?: string }
) {
  return (
    <Stack gap={4}>
      <Text size="xs" fw={600} c="dimmed" tt="uppercase">{label}</Text>
      <Group
        gap="xs"
        wrap="nowrap"
        justify="space-between"
        style={{ border: "1px solid var(--mantine-color-default-border)", borderRadius: 8 }}
        px="sm"
        py={6}
      >
        <Text ff="monospace" size="sm" style={{ wordBreak: "break-all" }} data-testid={testId}>{value}</Text>
        <CopyIcon value={value} label={label} />
      </Group>
    </Stack>
  )
}

/** A multi-line snippet with a copy button. @category components */
export function Snippet({ code, label }: { readonly code: string; readonly label?: string }) {
  return (
    <Box pos="relative">
      <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all", paddingRight: 40 }}>{code}</Code>
      <Box pos="absolute" top={6} right={6}>
        <CopyIcon value={code} {...(label === undefined ? {} : { label })} />
      </Box>
    </Box>
  )
}

/** A headline number. @category components */
export function StatCard({ label, value, hint, icon, testId }: {
  readonly label: string
  readonly value: ReactNode
  readonly hint?: string
  readonly icon?: ReactNode
  readonly testId?: string
}) {
  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <Stack gap={2}>
          <Text size="xs" c="dimmed" fw={600} tt="uppercase">{label}</Text>
          <Text fz={28} fw={700} lh={1.2} data-testid={testId}>{value}</Text>
          {hint && <Text size="xs" c="dimmed">{hint}</Text>}
        </Stack>
        {icon}
      </Group>
    </Paper>
  )
}

/**
 * A dialog that asks before doing something destructive. When the action
 * fails, the server's message is shown in the dialog, which stays open.
 *
 * @category components
 */
export function ConfirmDialog({ opened, onClose, title, body, onConfirm, color = "red", confirmLabel }: {
  readonly opened: boolean
  readonly onClose: () => void
  readonly title: string
  readonly body?: string
  readonly onConfirm: () => Promise<unknown> | void
  readonly color?: string
  readonly confirmLabel?: string
}) {
  const { t } = useI18n()
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<unknown>(undefined)
  const close = () => {
    setFailure(undefined)
    onClose()
  }
  return (
    <Modal opened={opened} onClose={close} title={<Text fw={700}>{title}</Text>} centered>
      <Stack>
        <Text size="sm">{body ?? t("common.cannotUndo")}</Text>
        {failure !== undefined && (
          <Alert color="red" variant="light" data-testid="confirm-error">
            <Text size="sm">{errorMessage(failure, t)}</Text>
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>{t("common.cancel")}</Button>
          <Button
            color={color}
            loading={busy}
            onClick={async () => {
              setBusy(true)
              setFailure(undefined)
              try {
                await onConfirm()
                close()
              } catch (error) {
                // The server's own words, in the dialog that asked: not a generic "Something went wrong".
                setFailure(error)
              } finally {
                setBusy(false)
              }
            }}
          >
            {confirmLabel ?? t("common.confirm")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  )
}

/**
 * A button that asks before doing something destructive (see `ConfirmDialog`).
 *
 * @category components
 */
export function ConfirmButton({ title, body, onConfirm, children, color = "red", confirmLabel, buttonProps }: {
  readonly title: string
  readonly body?: string
  readonly onConfirm: () => Promise<unknown> | void
  readonly children: ReactNode
  readonly color?: string
  readonly confirmLabel?: string
  readonly buttonProps?: Record<string, unknown>
}) {
  const [open, setOpen] = useState(false)
  return (
    <>
      <Button size="xs" variant="subtle" color={color} onClick={() => setOpen(true)} {...buttonProps}>
        {children}
      </Button>
      <ConfirmDialog
        opened={open}
        onClose={() => setOpen(false)}
        title={title}
        {...(body === undefined ? {} : { body })}
        onConfirm={onConfirm}
        color={color}
        {...(confirmLabel === undefined ? {} : { confirmLabel })}
      />
    </>
  )
}

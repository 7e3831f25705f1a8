/**
 * Changing one's own password (a dialog from the user menu).
 *
 * @since 0.1.0
 */
import { Alert, Button, Group, Modal, PasswordInput, Stack } from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { errorMessage } from "../components/States.tsx"
import { call } from "../lib/api.ts"
import { Contract } from "../lib/contract.ts"
import { useI18n } from "../lib/i18n.tsx"
import { useForm } from "../lib/useForm.ts"

/** The change-password dialog. @category pages */
export function ChangePasswordModal({ opened, onClose }: { readonly opened: boolean; readonly onClose: () => void }) {
  const { t } = useI18n()
  const form = useForm({
    initial: { currentPassword: "", newPassword: "", repeat: "" },
    schema: Contract.ChangePasswordRequest,
    toRequest: ({ currentPassword, newPassword }) => ({ currentPassword, newPassword }),
    check: (v) => (v.repeat !== v.newPassword ? { repeat: t("password.mismatch") } : {}),
    onSubmit: async (body) => {
      await call((api) => api.session.changePassword({ payload: body }))
      notifications.show({ color: "teal", message: t("password.changed") })
      form.reset()
      onClose()
    }
  })
  return (
    <Modal opened={opened} onClose={onClose} title={t("password.title")} centered>
      <form onSubmit={(e) => void form.submit(e)} noValidate>
        <Stack>
          {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
          <PasswordInput
            label={t("password.current")}
            autoComplete="current-password"
            {...form.field("currentPassword")}
          />
          <PasswordInput label={t("password.new")} autoComplete="new-password" {...form.field("newPassword")} />
          <PasswordInput label={t("password.confirm")} autoComplete="new-password" {...form.field("repeat")} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>{t("common.cancel")}</Button>
            <Button type="submit" loading={form.submitting}>{t("common.save")}</Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  )
}

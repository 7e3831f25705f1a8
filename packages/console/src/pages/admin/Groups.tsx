/**
 * Administration of groups: ratio, limits, who may pick them.
 *
 * @since 0.1.0
 */
import {
  Alert,
  Badge,
  Button,
  Group,
  Modal,
  MultiSelect,
  Paper,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput
} from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconPlus } from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { ConfirmButton, PageHeader } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, QueryState } from "../../components/States.tsx"
import { WideTable } from "../../components/WideTable.tsx"
import { call, type Contract } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"
import { limitsText } from "../Models.tsx"

const limit = (text: string): number | null | string =>
  text.trim() === "" ? null : Number.isInteger(Number(text)) ? Number(text) : text

function GroupForm({ group, users, onDone }: {
  readonly group: Contract.AdminGroup | undefined
  readonly users: ReadonlyArray<Contract.AdminUser>
  readonly onDone: () => void
}) {
  const { t } = useI18n()
  const form = useForm({
    initial: {
      name: group?.name ?? "",
      ratio: group?.ratio ?? "1",
      rpm: group?.limits.rpm?.toString() ?? "",
      tpm: group?.limits.tpm?.toString() ?? "",
      concurrency: group?.limits.concurrency?.toString() ?? "",
      selectable: group?.selectable ?? false,
      userIds: users.filter((u) => group?.users.includes(u.name)).map((u) => u.id)
    },
    schema: group === undefined ? C.CreateGroupRequest : C.UpdateGroupRequest,
    toRequest: (v) => ({
      ...(group === undefined ? { name: v.name.trim() } : { userIds: v.userIds }),
      ratio: v.ratio.trim(),
      limits: { rpm: limit(v.rpm), tpm: limit(v.tpm), concurrency: limit(v.concurrency) },
      selectable: v.selectable
    }),
    onSubmit: async (body) => {
      if (group === undefined) {
        await call((api) => api.catalog.createGroup({ payload: body as Contract.CreateGroupRequest }))
      } else await call((api) => api.catalog.updateGroup({ params: { name: group.name }, payload: body }))
      onDone()
    }
  })
  const limitError = (key: "rpm" | "tpm" | "concurrency") =>
    form.errors[key] ?? (form.errors.limits && form.values[key] !== "" ? form.errors.limits : undefined)
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        {group === undefined && <TextInput label={t("common.name")} data-autofocus {...form.field("name")} />}
        <TextInput label={t("admin.groups.ratio")} inputMode="decimal" {...form.field("ratio")} />
        <SimpleGrid cols={3}>
          <TextInput
            label={t("admin.groups.rpm")}
            placeholder={t("common.unlimited")}
            {...form.field("rpm")}
            error={limitError("rpm")}
          />
          <TextInput
            label={t("admin.groups.tpm")}
            placeholder={t("common.unlimited")}
            {...form.field("tpm")}
            error={limitError("tpm")}
          />
          <TextInput
            label={t("admin.groups.concurrency")}
            placeholder={t("common.unlimited")}
            {...form.field("concurrency")}
            error={limitError("concurrency")}
          />
        </SimpleGrid>
        <Switch
          label={t("admin.groups.selectable")}
          checked={form.values.selectable}
          onChange={(e) => form.set("selectable", e.currentTarget.checked)}
        />
        {group !== undefined && (
          <MultiSelect
            label={t("admin.groups.users")}
            searchable
            data={users.map((u) => ({ value: u.id, label: u.name }))}
            value={form.values.userIds}
            onChange={(v) => form.set("userIds", v)}
          />
        )}
        <Group justify="flex-end">
          <Button type="submit" loading={form.submitting}>
            {group === undefined ? t("common.create") : t("common.save")}
          </Button>
        </Group>
      </Stack>
    </form>
  )
}

/** The groups page. @category pages */
export function AdminGroupsPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const groups = useQuery({ queryKey: ["admin", "groups"], queryFn: () => call((api) => api.catalog.listGroups()) })
  const users = useQuery({ queryKey: ["admin", "users"], queryFn: () => call((api) => api.users.list()) })
  const [editing, setEditing] = useState<Contract.AdminGroup | "new" | undefined>(undefined)
  const refresh = () => client.invalidateQueries({ queryKey: ["admin"] })
  return (
    <>
      <PageHeader
        title={t("admin.groups.title")}
        subtitle={t("admin.groups.subtitle")}
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing("new")}>
            {t("admin.groups.create")}
          </Button>
        }
      />
      <Paper withBorder radius="md" p="xs">
        <QueryState query={groups}>
          {(data) =>
            data.data.length === 0
              ? (
                <EmptyState
                  title={t("admin.groups.empty")}
                  action={<Button onClick={() => setEditing("new")}>{t("admin.groups.create")}</Button>}
                />
              )
              : (
                <WideTable minWidth={640} stickyLast>
                  <Table verticalSpacing="sm" highlightOnHover data-testid="groups-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>{t("common.name")}</Table.Th>
                        <Table.Th>{t("admin.groups.ratio")}</Table.Th>
                        <Table.Th>{t("models.limits")}</Table.Th>
                        <Table.Th>{t("admin.groups.users")}</Table.Th>
                        <Table.Th>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((g) => (
                        <Table.Tr key={g.name}>
                          <Table.Td>
                            <Text fw={600} size="sm">{g.name}</Text>
                          </Table.Td>
                          <Table.Td>×{g.ratio}</Table.Td>
                          <Table.Td>
                            <Text size="sm">{limitsText(g.limits, t)}</Text>
                          </Table.Td>
                          <Table.Td>
                            <Group gap={4}>
                              {g.selectable && (
                                <Badge color="teal" variant="light">{t("admin.groups.selectable")}</Badge>
                              )}
                              {g.users.map((u) => <Badge key={u} size="sm" variant="outline">{u}</Badge>)}
                            </Group>
                          </Table.Td>
                          <Table.Td>
                            <Group gap={4} wrap="nowrap">
                              <Button size="xs" variant="subtle" onClick={() => setEditing(g)}>
                                {t("common.edit")}
                              </Button>
                              <ConfirmButton
                                title={t("admin.groups.deleteTitle", { name: g.name })}
                                confirmLabel={t("common.delete")}
                                onConfirm={async () => {
                                  await call((api) => api.catalog.deleteGroup({ params: { name: g.name } }))
                                  await refresh()
                                }}
                              >
                                {t("common.delete")}
                              </ConfirmButton>
                            </Group>
                          </Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </WideTable>
              )}
        </QueryState>
      </Paper>
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        title={<Text fw={700}>{editing === "new" ? t("admin.groups.create") : editing?.name}</Text>}
        centered
      >
        {editing !== undefined && (
          <GroupForm
            group={editing === "new" ? undefined : editing}
            users={users.data?.data ?? []}
            onDone={() => {
              setEditing(undefined)
              notifications.show({ color: "teal", message: t("common.saved") })
              void refresh()
            }}
          />
        )}
      </Modal>
    </>
  )
}

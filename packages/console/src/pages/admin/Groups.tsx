/**
 * Administration of groups: ratio, limits, who may pick them, and the
 * channels (and so the models) each reaches: a group no channel serves is
 * flagged, channels are attached from its form, and groups channels name
 * without settings are listed too. The `default` group cannot be deleted.
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
  TextInput,
  Tooltip
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

/** The channels that serve a group, and the models they reach (sorted, unique). @category helpers */
export const reach = (group: string, channels: ReadonlyArray<Contract.AdminChannel>) => {
  const serving = channels.filter((c) => c.groups.includes(group))
  const models = [...new Set(serving.filter((c) => c.enabled).flatMap((c) => c.models))].sort()
  return { channels: serving, models }
}

function GroupForm({ group, name: suggested, users, channels, onDone }: {
  readonly group: Contract.AdminGroup | undefined
  /** A name to start a new group with (a group channels name but that has no settings). */
  readonly name?: string
  readonly users: ReadonlyArray<Contract.AdminUser>
  readonly channels: ReadonlyArray<Contract.AdminChannel>
  readonly onDone: () => void
}) {
  const { t } = useI18n()
  const [attached, setAttached] = useState<Array<string>>(
    group === undefined ? [] : channels.filter((c) => c.groups.includes(group.name)).map((c) => c.id)
  )
  const form = useForm({
    initial: {
      name: group?.name ?? suggested ?? "",
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
      const name = group?.name ?? (body as Contract.CreateGroupRequest).name
      if (group === undefined) {
        await call((api) => api.catalog.createGroup({ payload: body as Contract.CreateGroupRequest }))
      } else await call((api) => api.catalog.updateGroup({ params: { name: group.name }, payload: body }))
      // Attach and detach channels: each changed channel gets its groups with this one added or removed.
      for (const channel of channels) {
        const was = channel.groups.includes(name)
        const now = attached.includes(channel.id)
        if (was === now) continue
        const groups = now ? [...channel.groups, name] : channel.groups.filter((g) => g !== name)
        await call((api) => api.catalog.updateChannel({ params: { id: channel.id }, payload: { groups } }))
      }
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
        <MultiSelect
          label={t("admin.groups.channels")}
          description={t("admin.groups.channelsHint")}
          searchable
          data={channels.map((c) => ({ value: c.id, label: c.name }))}
          value={attached}
          onChange={setAttached}
          data-testid="group-channels"
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
  const channels = useQuery({
    queryKey: ["admin", "channels"],
    queryFn: () => call((api) => api.catalog.listChannels())
  })
  const [editing, setEditing] = useState<Contract.AdminGroup | "new" | { readonly name: string } | undefined>(
    undefined
  )
  const channelList = channels.data?.data ?? []
  /** Groups channels name that have no settings of their own: listed so they never vanish from view. */
  const unset = (data: ReadonlyArray<Contract.AdminGroup>) =>
    [...new Set(channelList.flatMap((c) => c.groups))].filter((g) => !data.some((d) => d.name === g)).sort()
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
                        <Table.Th>{t("admin.groups.reaches")}</Table.Th>
                        <Table.Th>{t("admin.groups.users")}</Table.Th>
                        <Table.Th>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((g) => (
                        <Table.Tr key={g.name} data-group={g.name}>
                          <Table.Td>
                            <Text fw={600} size="sm">{g.name}</Text>
                          </Table.Td>
                          <Table.Td>×{g.ratio}</Table.Td>
                          <Table.Td>
                            <Text size="sm">{limitsText(g.limits, t)}</Text>
                          </Table.Td>
                          <Table.Td>
                            <Reach group={g.name} channels={channelList} loaded={channels.data !== undefined} />
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
                              {g.name === "default"
                                ? (
                                  <Tooltip label={t("admin.groups.defaultKept")} withArrow multiline w={260}>
                                    <Button size="xs" variant="subtle" color="gray" data-disabled>
                                      {t("common.delete")}
                                    </Button>
                                  </Tooltip>
                                )
                                : (
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
                                )}
                            </Group>
                          </Table.Td>
                        </Table.Tr>
                      ))}
                      {unset(data.data).map((name) => (
                        <Table.Tr key={name} data-group={name}>
                          <Table.Td>
                            <Text fw={600} size="sm">{name}</Text>
                            <Badge size="xs" color="orange" variant="light">{t("admin.groups.unset")}</Badge>
                          </Table.Td>
                          <Table.Td>×1</Table.Td>
                          <Table.Td>
                            <Text size="sm">{t("common.unlimited")}</Text>
                          </Table.Td>
                          <Table.Td>
                            <Reach group={name} channels={channelList} loaded />
                          </Table.Td>
                          <Table.Td />
                          <Table.Td>
                            <Button size="xs" variant="subtle" onClick={() => setEditing({ name })}>
                              {t("admin.groups.setUp")}
                            </Button>
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
        title={
          <Text fw={700}>
            {editing === "new" || (editing !== undefined && !("ratio" in editing))
              ? t("admin.groups.create")
              : editing?.name}
          </Text>
        }
        centered
      >
        {editing !== undefined && (
          <GroupForm
            group={editing === "new" || !("ratio" in editing) ? undefined : editing}
            {...(editing !== "new" && !("ratio" in editing) ? { name: editing.name } : {})}
            users={users.data?.data ?? []}
            channels={channelList}
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

/** What a group reaches: its channels and models, or a warning that it reaches none. */
function Reach({ group, channels, loaded }: {
  readonly group: string
  readonly channels: ReadonlyArray<Contract.AdminChannel>
  readonly loaded: boolean
}) {
  const { t } = useI18n()
  if (!loaded) return null
  const { channels: serving, models } = reach(group, channels)
  if (models.length === 0) {
    return (
      <Alert color="orange" variant="light" p={6} data-testid="group-unreached">
        <Text size="xs">{t("admin.groups.noModels")}</Text>
      </Alert>
    )
  }
  return (
    <Stack gap={2} maw={360} data-testid="group-reach">
      <Group gap={4}>
        {serving.map((c) => (
          <Badge key={c.id} size="sm" variant="light" color={c.enabled ? "blue" : "gray"}>{c.name}</Badge>
        ))}
      </Group>
      <Text size="xs" c="dimmed" style={{ overflowWrap: "anywhere" }}>
        {t("admin.groups.models", { count: models.length })}: {models.join(", ")}
      </Text>
    </Stack>
  )
}

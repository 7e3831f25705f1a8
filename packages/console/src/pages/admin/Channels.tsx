/**
 * Administration of channels: upstream accounts with write-only keys, and the
 * Test button that sends one real request through a channel.
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
  NumberInput,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  TagsInput,
  Text,
  Textarea,
  TextInput
} from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconPlayerPlay, IconPlus, IconServer } from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, useState } from "react"
import { ConfirmButton, PageHeader } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, QueryState } from "../../components/States.tsx"
import { call, type Contract, Endpoints } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"

/** Parses `public=upstream` lines into a model map. @category forms */
export const parseModelMap = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split("\n").map((line) => line.trim()).filter((line) => line.includes("=")).map((line) => {
      const at = line.indexOf("=")
      return [line.slice(0, at).trim(), line.slice(at + 1).trim()]
    })
  )

interface ChannelValues extends Record<string, unknown> {
  name: string
  type: Contract.ChannelType
  baseUrl: string
  apiKeys: string
  models: Array<string>
  modelMap: string
  groups: Array<string>
  priority: number | string
  weight: number | string
  enabled: boolean
  apiVersion: string
}

/** The create/edit channel form. @category components */
export function ChannelForm({ channel, groups, onDone }: {
  readonly channel: Contract.AdminChannel | undefined
  readonly groups: ReadonlyArray<string>
  readonly onDone: () => void
}) {
  const { t } = useI18n()
  const initial: ChannelValues = {
    name: channel?.name ?? "",
    type: channel?.type ?? "openai",
    baseUrl: channel?.baseUrl ?? "",
    apiKeys: "",
    models: [...(channel?.models ?? [])],
    modelMap: Object.entries(channel?.modelMap ?? {}).map(([k, v]) => `${k}=${v}`).join("\n"),
    groups: [...(channel?.groups ?? ["default"])],
    priority: channel?.priority ?? 0,
    weight: channel?.weight ?? 1,
    enabled: channel?.enabled ?? true,
    apiVersion: channel?.apiVersion ?? ""
  }
  const toRequest = (v: ChannelValues) => {
    const keys = v.apiKeys.split("\n").map((k) => k.trim()).filter((k) => k.length > 0)
    return {
      name: v.name.trim(),
      type: v.type,
      baseUrl: v.baseUrl.trim(),
      models: v.models,
      modelMap: parseModelMap(v.modelMap),
      groups: v.groups,
      priority: Number(v.priority),
      weight: Number(v.weight),
      enabled: v.enabled,
      ...(v.apiVersion.trim() !== "" ? { apiVersion: v.apiVersion.trim() } : {}),
      ...(channel === undefined || keys.length > 0 ? { apiKeys: keys } : {})
    }
  }
  const form = useForm({
    initial,
    schema: channel === undefined ? C.CreateChannelRequest : C.UpdateChannelRequest,
    toRequest,
    onSubmit: async (body) => {
      if (channel === undefined) await call(Endpoints.adminCreateChannel, { body: body as Contract.CreateChannelRequest })
      else await call(Endpoints.adminUpdateChannel, { params: { id: channel.id }, body })
      onDone()
    }
  })
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("common.name")} data-autofocus {...form.field("name")} />
          <Select
            label={t("admin.channels.type")}
            allowDeselect={false}
            data={["openai", "gemini", "anthropic", "azure"]}
            value={form.values.type}
            error={form.errors.type}
            onChange={(v) => form.set("type", (v ?? "openai") as Contract.ChannelType)}
          />
        </SimpleGrid>
        <TextInput label={t("admin.channels.baseUrl")} placeholder="https://api.openai.com/v1" {...form.field("baseUrl")} />
        <Textarea
          label={t("admin.channels.apiKeys")}
          description={channel !== undefined ? t("admin.channels.apiKeysKeep", { count: channel.keyCount }) : undefined}
          autosize
          minRows={2}
          ff="monospace"
          autoComplete="off"
          {...form.field("apiKeys")}
          error={form.errors.apiKeys}
        />
        <TagsInput label={t("admin.channels.models")} value={form.values.models} error={form.errors.models} onChange={(v) => form.set("models", v)} />
        <Textarea label={t("admin.channels.modelMap")} autosize minRows={1} ff="monospace" placeholder="gpt-4o=gpt-4o-2024-08-06" {...form.field("modelMap")} />
        <MultiSelect label={t("admin.channels.groups")} data={[...new Set([...groups, ...form.values.groups])]} value={form.values.groups} onChange={(v) => form.set("groups", v)} />
        <SimpleGrid cols={{ base: 2, sm: 3 }}>
          <NumberInput label={t("admin.channels.priority")} value={form.values.priority} error={form.errors.priority} onChange={(v) => form.set("priority", v)} allowDecimal={false} />
          <NumberInput label={t("admin.channels.weight")} value={form.values.weight} error={form.errors.weight} min={0} onChange={(v) => form.set("weight", v)} allowDecimal={false} />
          {form.values.type === "azure" && <TextInput label={t("admin.channels.apiVersion")} placeholder="2024-10-21" {...form.field("apiVersion")} />}
        </SimpleGrid>
        <Switch label={t("common.enabled")} checked={form.values.enabled} onChange={(e) => form.set("enabled", e.currentTarget.checked)} />
        <Group justify="flex-end"><Button type="submit" loading={form.submitting}>{channel === undefined ? t("common.create") : t("common.save")}</Button></Group>
      </Stack>
    </form>
  )
}

/**
 * The Test button beside the row's other actions, with the result on its own
 * line below them (so a long upstream error never pushes the buttons away).
 */
function TestButton({ channel, children }: { readonly channel: Contract.AdminChannel; readonly children?: ReactNode }) {
  const { t } = useI18n()
  const [busy, setBusy] = useState(false)
  const [result, setResult] = useState<Contract.TestChannelResult | undefined>(undefined)
  return (
    <Stack gap={4} align="flex-start">
      <Group gap={4} wrap="nowrap">
        <Button
          size="xs"
          variant="light"
          leftSection={<IconPlayerPlay size={14} />}
          loading={busy}
          aria-label={`${t("admin.channels.test")} ${channel.name}`}
          onClick={async () => {
            setBusy(true)
            try {
              setResult(await call(Endpoints.adminTestChannel, { params: { id: channel.id }, body: {} }))
            } catch (error) {
              notifications.show({ color: "red", message: errorMessage(error, t) })
            } finally {
              setBusy(false)
            }
          }}
        >
          {t("admin.channels.test")}
        </Button>
        {children}
      </Group>
      {result && (
        <Text size="xs" c={result.ok ? "teal" : "red"} maw={280} style={{ overflowWrap: "anywhere" }} data-testid="test-result">
          {result.ok
            ? t("admin.channels.testOk", { ms: Math.round(result.latencyMs), message: result.message })
            : t("admin.channels.testFailed", { status: result.status ?? "—", ms: Math.round(result.latencyMs), message: result.message })}
        </Text>
      )}
    </Stack>
  )
}

/** The channels page. @category pages */
export function AdminChannelsPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const channels = useQuery({ queryKey: ["admin", "channels"], queryFn: () => call(Endpoints.adminListChannels) })
  const groups = useQuery({ queryKey: ["admin", "groups"], queryFn: () => call(Endpoints.adminListGroups) })
  const [editing, setEditing] = useState<Contract.AdminChannel | "new" | undefined>(undefined)
  const refresh = () => client.invalidateQueries({ queryKey: ["admin", "channels"] })
  const groupNames = (groups.data?.data ?? []).map((g) => g.name)
  return (
    <>
      <PageHeader
        title={t("admin.channels.title")}
        subtitle={t("admin.channels.subtitle")}
        actions={<Button leftSection={<IconPlus size={16} />} onClick={() => setEditing("new")}>{t("admin.channels.create")}</Button>}
      />
      <Paper withBorder radius="md" p="xs">
        <QueryState query={channels}>
          {(data) =>
            data.data.length === 0
              ? <EmptyState icon={<IconServer size={28} />} title={t("admin.channels.empty")} hint={t("admin.channels.emptyHint")} action={<Button onClick={() => setEditing("new")}>{t("admin.channels.create")}</Button>} />
              : (
                <Table.ScrollContainer minWidth={1040}>
                  <Table verticalSpacing="sm" highlightOnHover data-testid="channels-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>{t("common.name")}</Table.Th>
                        <Table.Th>{t("admin.channels.models")}</Table.Th>
                        <Table.Th>{t("admin.channels.groups")}</Table.Th>
                        <Table.Th>{t("admin.channels.keys")}</Table.Th>
                        <Table.Th ta="right">{t("admin.channels.priority")} / {t("admin.channels.weight")}</Table.Th>
                        <Table.Th>{t("keys.status")}</Table.Th>
                        <Table.Th>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((c) => (
                        <Table.Tr key={c.id} data-channel={c.name}>
                          <Table.Td>
                            <Group gap={6}><Text fw={600} size="sm">{c.name}</Text><Badge size="xs" variant="light">{c.type}</Badge></Group>
                            <Text size="xs" c="dimmed" ff="monospace">{c.baseUrl}</Text>
                          </Table.Td>
                          <Table.Td><Group gap={4} maw={260}>{c.models.map((m) => <Badge key={m} size="sm" variant="outline">{c.modelMap[m] ? `${m} → ${c.modelMap[m]}` : m}</Badge>)}</Group></Table.Td>
                          <Table.Td><Group gap={4}>{c.groups.map((g) => <Badge key={g} size="sm" variant="light">{g}</Badge>)}</Group></Table.Td>
                          <Table.Td><Text size="sm" ff="monospace">{c.keyCount} · {c.keyHints.join(" ")}</Text></Table.Td>
                          <Table.Td ta="right">{c.priority} / {c.weight}</Table.Td>
                          <Table.Td>
                            <Switch
                              checked={c.enabled}
                              aria-label={`${c.name} ${t("common.enabled")}`}
                              onChange={async (e) => {
                                try {
                                  await call(Endpoints.adminUpdateChannel, { params: { id: c.id }, body: { enabled: e.currentTarget.checked } })
                                  await refresh()
                                } catch (error) {
                                  notifications.show({ color: "red", title: t("common.error"), message: errorMessage(error, t) })
                                }
                              }}
                            />
                          </Table.Td>
                          <Table.Td>
                            <TestButton channel={c}>
                              <Button size="xs" variant="subtle" onClick={() => setEditing(c)}>{t("common.edit")}</Button>
                              <ConfirmButton
                                title={t("admin.channels.deleteTitle", { name: c.name })}
                                confirmLabel={t("common.delete")}
                                onConfirm={async () => {
                                  await call(Endpoints.adminDeleteChannel, { params: { id: c.id } })
                                  await refresh()
                                }}
                              >
                                {t("common.delete")}
                              </ConfirmButton>
                            </TestButton>
                          </Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </Table.ScrollContainer>
              )}
        </QueryState>
      </Paper>
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        title={<Text fw={700}>{editing === "new" ? t("admin.channels.create") : editing?.name}</Text>}
        centered
        size="lg"
      >
        {editing !== undefined && (
          <ChannelForm
            channel={editing === "new" ? undefined : editing}
            groups={groupNames}
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

/**
 * API keys: create (the secret is shown once), list, enable/disable, edit
 * limits and spending caps, delete.
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
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput
} from "@mantine/core"
import { useMediaQuery } from "@mantine/hooks"
import { notifications } from "@mantine/notifications"
import { IconAlertTriangle, IconKey, IconPlus } from "@tabler/icons-react"
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { ConfirmButton, CopyField, PageHeader } from "../components/Bits.tsx"
import { EmptyState, errorMessage, ErrorState, QueryState } from "../components/States.tsx"
import { Usd } from "../components/Usd.tsx"
import { WideTable } from "../components/WideTable.tsx"
import { call, type Contract } from "../lib/api.ts"
import { Contract as C } from "../lib/contract.ts"
import { ago, dateTime, usd } from "../lib/format.ts"
import { useI18n } from "../lib/i18n.tsx"
import { rememberNewKey } from "../lib/newKey.ts"
import { useForm } from "../lib/useForm.ts"
import { limitsText } from "./Models.tsx"

const DAY = 86_400_000

/** The limit and cap fields of the key forms, as typed (empty: none). @category models */
export interface KeyLimitValues extends Record<string, unknown> {
  rpm: string
  tpm: string
  concurrency: string
  dailyBudget: string
  monthlyBudget: string
}

/** The values of the create-key form. @category models */
export interface KeyFormValues extends KeyLimitValues {
  name: string
  group: string | null
  models: Array<string>
  expiry: string
  quota: string
}

/** A typed limit: empty is none (`null`), a whole number is itself, anything else is left for the Schema to refuse. */
const limit = (text: string): number | null | string =>
  text.trim() === "" ? null : Number.isInteger(Number(text)) ? Number(text) : text

/** Turns the form's values into the request body. @category forms */
export const keyRequest = (v: KeyFormValues, now = Date.now()): Record<string, unknown> => ({
  name: v.name.trim(),
  ...(v.group ? { group: v.group } : {}),
  ...(v.models.length > 0 ? { models: v.models } : {}),
  ...(v.expiry !== "never" ? { expiresAt: now + Number(v.expiry) * DAY } : {}),
  ...(v.quota.trim() !== "" ? { quota: v.quota.trim() } : {}),
  ...(v.rpm.trim() !== "" ? { rpm: limit(v.rpm) } : {}),
  ...(v.tpm.trim() !== "" ? { tpm: limit(v.tpm) } : {}),
  ...(v.concurrency.trim() !== "" ? { concurrency: limit(v.concurrency) } : {}),
  ...(v.dailyBudget.trim() !== "" ? { dailyBudget: v.dailyBudget.trim() } : {}),
  ...(v.monthlyBudget.trim() !== "" ? { monthlyBudget: v.monthlyBudget.trim() } : {})
})

/** Turns the limits form's values into an update: every field is sent, empty ones as `null` (removed). @category forms */
export const keyLimitsRequest = (v: KeyLimitValues): Record<string, unknown> => ({
  rpm: limit(v.rpm),
  tpm: limit(v.tpm),
  concurrency: limit(v.concurrency),
  dailyBudget: v.dailyBudget.trim() === "" ? null : v.dailyBudget.trim(),
  monthlyBudget: v.monthlyBudget.trim() === "" ? null : v.monthlyBudget.trim()
})

/** The values a key's limits form starts from. @category forms */
export const keyLimitValues = (key: Contract.ApiKey): KeyLimitValues => ({
  rpm: key.rpm?.toString() ?? "",
  tpm: key.tpm?.toString() ?? "",
  concurrency: key.concurrency?.toString() ?? "",
  dailyBudget: key.dailyBudget ?? "",
  monthlyBudget: key.monthlyBudget ?? ""
})

/** The limit and cap inputs shared by the create and edit forms. */
function KeyLimitFields({ form, groupLimits }: {
  readonly form: {
    readonly field: (
      key: keyof KeyLimitValues & string
    ) => { value: unknown; error: string | undefined; onChange: (event: unknown) => void }
  }
  readonly groupLimits: Contract.Limits | undefined
}) {
  const { t } = useI18n()
  const field = (key: keyof KeyLimitValues & string) => {
    const bound = form.field(key)
    return { ...bound, value: String(bound.value) }
  }
  return (
    <>
      <SimpleGrid cols={3}>
        <TextInput
          label={t("admin.groups.rpm")}
          placeholder={t("common.unlimited")}
          inputMode="numeric"
          {...field("rpm")}
        />
        <TextInput
          label={t("admin.groups.tpm")}
          placeholder={t("common.unlimited")}
          inputMode="numeric"
          {...field("tpm")}
        />
        <TextInput
          label={t("admin.groups.concurrency")}
          placeholder={t("common.unlimited")}
          inputMode="numeric"
          {...field("concurrency")}
        />
      </SimpleGrid>
      {groupLimits !== undefined && (
        <Text size="xs" c="dimmed" mt={-8}>{t("keys.limitsHint", { limits: limitsText(groupLimits, t) })}</Text>
      )}
      <SimpleGrid cols={2}>
        <TextInput
          label={t("keys.dailyBudget")}
          placeholder={t("common.unlimited")}
          inputMode="decimal"
          {...field("dailyBudget")}
        />
        <TextInput
          label={t("keys.monthlyBudget")}
          placeholder={t("common.unlimited")}
          inputMode="decimal"
          {...field("monthlyBudget")}
        />
      </SimpleGrid>
      <Text size="xs" c="dimmed" mt={-8}>{t("keys.budgetHint")}</Text>
    </>
  )
}

/** The values of the edit-key form: what a key may call, until when, its lifetime cap, and its limits. */
interface KeyEditValues extends KeyLimitValues {
  models: Array<string>
  /** "keep", "never", or a number of days from now. */
  expiry: string
  quota: string
}

/**
 * Edits a key: its models (within what its group is served), its expiry,
 * lifetime cap, limits and budgets; `save` sends the update (to the owner's
 * endpoint or, for admins, to any key's).
 *
 * @category components
 */
export function KeyLimitsForm({ apiKey, groupLimits, groupModels, save, onDone, onCancel }: {
  readonly apiKey: Contract.ApiKey
  readonly groupLimits?: Contract.Limits | undefined
  /** The models the key's group is served (what its models may be chosen from). */
  readonly groupModels?: ReadonlyArray<string> | undefined
  readonly save: (body: Contract.UpdateKeyRequest) => Promise<unknown>
  readonly onDone: () => void
  readonly onCancel: () => void
}) {
  const { t, locale } = useI18n()
  const form = useForm<KeyEditValues, typeof C.UpdateKeyRequest>({
    initial: { ...keyLimitValues(apiKey), models: [...apiKey.models], expiry: "keep", quota: apiKey.quota ?? "" },
    schema: C.UpdateKeyRequest,
    // Models, expiry and the lifetime cap are sent when changed; limits and budgets always (empty: none).
    toRequest: (v) => ({
      ...keyLimitsRequest(v),
      ...(v.models.join("\n") === apiKey.models.join("\n") ? {} : { models: v.models }),
      ...(v.expiry === "keep"
        ? {}
        : { expiresAt: v.expiry === "never" ? null : Date.now() + Number(v.expiry) * DAY }),
      ...(v.quota.trim() === (apiKey.quota ?? "") ? {} : { quota: v.quota.trim() === "" ? null : v.quota.trim() })
    }),
    onSubmit: async (body) => {
      await save(body)
      onDone()
    }
  })
  const offered = [...new Set([...(groupModels ?? []), ...apiKey.models])]
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && (
          <Alert color="red" icon={<IconAlertTriangle />}>{errorMessage(form.formError, t)}</Alert>
        )}
        <MultiSelect
          label={t("keys.models")}
          description={t("keys.modelsEditHint", { group: apiKey.group })}
          placeholder={form.values.models.length === 0 ? t("keys.allModels") : undefined}
          data={offered}
          searchable
          clearable
          value={form.values.models}
          error={form.errors.models ?? Object.entries(form.errors).find(([k]) => k.startsWith("models["))?.[1]}
          onChange={(value) => form.set("models", value)}
        />
        <Group grow align="flex-start">
          <Select
            label={t("keys.expiry")}
            allowDeselect={false}
            data={[
              {
                value: "keep",
                label: apiKey.expiresAt === null
                  ? t("keys.expiryKeepNever")
                  : t("keys.expiryKeep", { when: dateTime(apiKey.expiresAt, locale) })
              },
              { value: "never", label: t("keys.expiryNever") },
              { value: "7", label: t("keys.expiry7") },
              { value: "30", label: t("keys.expiry30") },
              { value: "90", label: t("keys.expiry90") },
              { value: "365", label: t("keys.expiry365") }
            ]}
            value={form.values.expiry}
            error={form.errors.expiresAt}
            onChange={(value) => form.set("expiry", value ?? "keep")}
          />
          <TextInput
            label={t("keys.quota")}
            placeholder={t("common.unlimited")}
            inputMode="decimal"
            {...form.field("quota")}
          />
        </Group>
        <KeyLimitFields form={form} groupLimits={groupLimits} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onCancel}>{t("common.cancel")}</Button>
          <Button type="submit" loading={form.submitting}>{t("common.save")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

/**
 * The create-key form, in a dialog. Calls `onCreated` with the new key and
 * its secret.
 *
 * @category components
 */
export function CreateKeyForm({ groups, onCreated, onCancel, create }: {
  readonly groups: ReadonlyArray<Contract.GroupModels>
  readonly onCreated: (created: Contract.CreatedKey) => void
  readonly onCancel: () => void
  /** Sends the request (default: the caller's own `POST /api/keys`; admins create for a user). */
  readonly create?: (body: Contract.CreateKeyRequest) => Promise<Contract.CreatedKey>
}) {
  const { t } = useI18n()
  const form = useForm<KeyFormValues, typeof C.CreateKeyRequest>({
    initial: {
      name: "",
      group: groups[0]?.name ?? null,
      models: [],
      expiry: "never",
      quota: "",
      rpm: "",
      tpm: "",
      concurrency: "",
      dailyBudget: "",
      monthlyBudget: ""
    },
    schema: C.CreateKeyRequest,
    toRequest: (v) => keyRequest(v),
    onSubmit: async (body) =>
      onCreated(await (create ?? ((payload) => call((api) => api.keys.create({ payload }))))(body))
  })
  const group = groups.find((g) => g.name === form.values.group)
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && (
          <Alert color="red" icon={<IconAlertTriangle />}>{errorMessage(form.formError, t)}</Alert>
        )}
        <TextInput
          label={t("keys.name")}
          placeholder={t("keys.namePlaceholder")}
          data-autofocus
          {...form.field("name")}
        />
        <Select
          label={t("keys.group")}
          description={t("keys.groupHint")}
          data={groups.map((g) => ({ value: g.name, label: g.ratio === "1" ? g.name : `${g.name} (×${g.ratio})` }))}
          allowDeselect={false}
          value={form.values.group}
          error={form.errors.group}
          onChange={(value) => {
            form.set("group", value)
            form.set("models", [])
          }}
        />
        <MultiSelect
          label={t("keys.models")}
          description={t("keys.modelsHint")}
          placeholder={form.values.models.length === 0 ? t("keys.allModels") : undefined}
          data={(group?.models ?? []).map((m) => m.id)}
          searchable
          clearable
          value={form.values.models}
          error={form.errors.models}
          onChange={(value) => form.set("models", value)}
        />
        <Group grow align="flex-start">
          <Select
            label={t("keys.expiry")}
            allowDeselect={false}
            data={[
              { value: "never", label: t("keys.expiryNever") },
              { value: "7", label: t("keys.expiry7") },
              { value: "30", label: t("keys.expiry30") },
              { value: "90", label: t("keys.expiry90") },
              { value: "365", label: t("keys.expiry365") }
            ]}
            value={form.values.expiry}
            error={form.errors.expiresAt}
            onChange={(value) => form.set("expiry", value ?? "never")}
          />
          <TextInput
            label={t("keys.quota")}
            placeholder={t("common.unlimited")}
            inputMode="decimal"
            {...form.field("quota")}
          />
        </Group>
        <Text size="xs" c="dimmed" mt={-8}>{t("keys.quotaHint")}</Text>
        <KeyLimitFields form={form} groupLimits={group?.limits} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onCancel}>{t("common.cancel")}</Button>
          <Button type="submit" loading={form.submitting}>{t("common.create")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

interface KeyActions {
  readonly onToggle?: ((key: Contract.ApiKey, enabled: boolean) => void) | undefined
  readonly onDelete?: ((key: Contract.ApiKey) => Promise<unknown>) | undefined
  readonly onEditLimits?: ((key: Contract.ApiKey) => void) | undefined
}

/** The parts of a key shown as a table row or as a card. */
function useKeyParts({ onToggle, onDelete, onEditLimits }: KeyActions) {
  const { t, locale } = useI18n()
  const now = Date.now()
  return {
    name: (key: Contract.ApiKey) => {
      const expired = key.expiresAt !== null && key.expiresAt <= now
      return (
        <>
          <Text fw={600} size="sm">{key.name}</Text>
          {key.expiresAt !== null && (
            <Text size="xs" c={expired ? "red" : "dimmed"}>
              {expired ? t("keys.expired") : `${t("keys.expiry")} ${dateTime(key.expiresAt, locale)}`}
            </Text>
          )}
        </>
      )
    },
    prefix: (key: Contract.ApiKey) => <Text ff="monospace" size="sm">{key.prefix}…</Text>,
    group: (key: Contract.ApiKey) => <Badge variant="light">{key.group}</Badge>,
    models: (key: Contract.ApiKey) =>
      key.models.length === 0
        ? <Text size="sm" c="dimmed">{t("common.all")}</Text>
        : <Group gap={4}>{key.models.map((m) => <Badge key={m} size="sm" variant="outline">{m}</Badge>)}</Group>,
    limits: (key: Contract.ApiKey) => (
      <>
        <Text size="sm">{limitsText({ rpm: key.rpm, tpm: key.tpm, concurrency: key.concurrency }, t)}</Text>
        {onEditLimits && (
          <Button
            size="compact-xs"
            variant="subtle"
            px={0}
            onClick={() => onEditLimits(key)}
            aria-label={`${t("keys.editLimits")}: ${key.name}`}
          >
            {t("keys.editLimits")}
          </Button>
        )}
      </>
    ),
    lastUsed: (key: Contract.ApiKey) => (
      <Text size="sm">{key.lastUsedAt === null ? t("common.never") : ago(key.lastUsedAt, locale)}</Text>
    ),
    spend: (key: Contract.ApiKey) => (
      <>
        <Text size="sm" ff="monospace">
          <Usd amount={key.spent} />
        </Text>
        {key.quota !== null && <Text size="xs" c="dimmed">/ {usd(key.quota)}</Text>}
        {key.dailyBudget !== null && <Text size="xs" c="dimmed">{t("keys.dailyBudget")}: {usd(key.dailyBudget)}</Text>}
        {key.monthlyBudget !== null && (
          <Text size="xs" c="dimmed">{t("keys.monthlyBudget")}: {usd(key.monthlyBudget)}</Text>
        )}
      </>
    ),
    status: (key: Contract.ApiKey) =>
      onToggle
        ? (
          <Switch
            checked={key.enabled}
            onChange={(e) => onToggle(key, e.currentTarget.checked)}
            label={key.enabled ? t("common.enabled") : t("common.disabled")}
            aria-label={`${key.name}: ${key.enabled ? t("common.disable") : t("common.enable")}`}
          />
        )
        : (
          <Badge color={key.enabled ? "teal" : "gray"} variant="light">
            {key.enabled ? t("common.enabled") : t("common.disabled")}
          </Badge>
        ),
    remove: (key: Contract.ApiKey) =>
      onDelete && (
        <ConfirmButton
          title={t("keys.deleteTitle", { name: key.name })}
          body={t("keys.deleteBody")}
          confirmLabel={t("common.delete")}
          onConfirm={() => onDelete(key)}
          buttonProps={{ "aria-label": `${t("common.delete")} ${key.name}` }}
        >
          {t("common.delete")}
        </ConfirmButton>
      )
  }
}

/**
 * The keys: a table, or at a phone's width one card per key (every action
 * of the table within reach, nothing to scroll sideways).
 *
 * @category components
 */
export function KeysTable({ keys, ...actions }: { readonly keys: ReadonlyArray<Contract.ApiKey> } & KeyActions) {
  const { t } = useI18n()
  const phone = useMediaQuery("(max-width: 48em)")
  const part = useKeyParts(actions)
  if (phone) {
    return (
      <Stack gap="sm" data-testid="keys-table" data-layout="cards">
        {keys.map((key) => (
          <Paper key={key.id} withBorder radius="md" p="sm" data-key-id={key.id}>
            <Group justify="space-between" align="flex-start" wrap="nowrap">
              <div>{part.name(key)}</div>
              {part.status(key)}
            </Group>
            <Group gap="xs" mt={6}>{part.prefix(key)}{part.group(key)}</Group>
            <SimpleGrid cols={2} mt="xs" spacing="xs">
              <div>
                <Text size="xs" c="dimmed">{t("keys.models")}</Text>
                {part.models(key)}
              </div>
              <div>
                <Text size="xs" c="dimmed">{t("keys.spent")}</Text>
                {part.spend(key)}
              </div>
              <div>
                <Text size="xs" c="dimmed">{t("models.limits")}</Text>
                {part.limits(key)}
              </div>
              <div>
                <Text size="xs" c="dimmed">{t("keys.lastUsed")}</Text>
                {part.lastUsed(key)}
              </div>
            </SimpleGrid>
            {actions.onDelete && <Group justify="flex-end" mt="xs">{part.remove(key)}</Group>}
          </Paper>
        ))}
      </Stack>
    )
  }
  return (
    <WideTable minWidth={900} stickyLast={actions.onDelete !== undefined}>
      <Table verticalSpacing="sm" highlightOnHover data-testid="keys-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("keys.name")}</Table.Th>
            <Table.Th>{t("keys.prefix")}</Table.Th>
            <Table.Th>{t("keys.group")}</Table.Th>
            <Table.Th>{t("keys.models")}</Table.Th>
            <Table.Th>{t("models.limits")}</Table.Th>
            <Table.Th>{t("keys.lastUsed")}</Table.Th>
            <Table.Th ta="right">{t("keys.spent")}</Table.Th>
            <Table.Th>{t("keys.status")}</Table.Th>
            {actions.onDelete && <Table.Th />}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {keys.map((key) => (
            <Table.Tr key={key.id} data-key-id={key.id}>
              <Table.Td>{part.name(key)}</Table.Td>
              <Table.Td>{part.prefix(key)}</Table.Td>
              <Table.Td>{part.group(key)}</Table.Td>
              <Table.Td>{part.models(key)}</Table.Td>
              <Table.Td>{part.limits(key)}</Table.Td>
              <Table.Td>{part.lastUsed(key)}</Table.Td>
              <Table.Td ta="right">{part.spend(key)}</Table.Td>
              <Table.Td>{part.status(key)}</Table.Td>
              {actions.onDelete && <Table.Td>{part.remove(key)}</Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </WideTable>
  )
}

/** Shows a new key's secret, once. @category components */
export function SecretModal(
  { created, onClose }: { readonly created: Contract.CreatedKey | undefined; readonly onClose: () => void }
) {
  const { t } = useI18n()
  return (
    <Modal
      opened={created !== undefined}
      onClose={onClose}
      title={<Text fw={700}>{t("keys.secretTitle")}</Text>}
      centered
      size="lg"
      closeOnClickOutside={false}
    >
      {created && (
        <Stack>
          <Alert color="yellow" variant="light" icon={<IconAlertTriangle />}>{t("keys.secretWarning")}</Alert>
          <CopyField label={created.key.name} value={created.secret} testId="new-secret" />
          <Group justify="flex-end">
            <Button onClick={onClose}>{t("keys.secretDone")}</Button>
          </Group>
        </Stack>
      )}
    </Modal>
  )
}

/** The keys page. @category pages */
export function KeysPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => call((api) => api.keys.list()) })
  const models = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  const [creating, setCreating] = useState(false)
  const [created, setCreated] = useState<Contract.CreatedKey | undefined>(undefined)
  const [editing, setEditing] = useState<Contract.ApiKey | undefined>(undefined)
  const refresh = () => client.invalidateQueries({ queryKey: ["keys"] })
  const toggle = useMutation({
    mutationFn: ({ key, enabled }: { key: Contract.ApiKey; enabled: boolean }) =>
      call((api) => api.keys.update({ params: { id: key.id }, payload: { enabled } })),
    onSuccess: () => {
      void refresh()
      notifications.show({ color: "teal", message: t("keys.updated") })
    },
    onError: (error) => notifications.show({ color: "red", message: errorMessage(error, t) })
  })
  const remove = async (key: Contract.ApiKey) => {
    try {
      await call((api) => api.keys.delete({ params: { id: key.id } }))
      notifications.show({ color: "teal", message: t("keys.deleted") })
      await refresh()
    } catch (error) {
      notifications.show({ color: "red", message: errorMessage(error, t) })
    }
  }
  return (
    <>
      <PageHeader
        title={t("keys.title")}
        subtitle={t("keys.subtitle")}
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)} disabled={!models.data}>
            {t("keys.create")}
          </Button>
        }
      />
      {models.error && (
        // Without the models the create form has nothing to offer: say why instead of leaving the button disabled.
        <Stack mb="md">
          <ErrorState error={models.error} onRetry={() => void models.refetch()} />
        </Stack>
      )}
      <Paper withBorder radius="md" p="xs">
        <QueryState query={keys}>
          {(data) =>
            data.data.length === 0
              ? (
                <EmptyState
                  icon={<IconKey size={28} />}
                  title={t("keys.empty")}
                  hint={t("keys.emptyHint")}
                  action={<Button onClick={() => setCreating(true)} disabled={!models.data}>{t("keys.create")}</Button>}
                />
              )
              : (
                <KeysTable
                  keys={data.data}
                  onToggle={(key, enabled) => toggle.mutate({ key, enabled })}
                  onDelete={remove}
                  onEditLimits={setEditing}
                />
              )}
        </QueryState>
      </Paper>
      <Modal
        opened={creating}
        onClose={() => setCreating(false)}
        title={<Text fw={700}>{t("keys.create")}</Text>}
        centered
        size="lg"
      >
        {models.data && (
          <CreateKeyForm
            groups={models.data.groups}
            onCancel={() => setCreating(false)}
            onCreated={(result) => {
              setCreating(false)
              setCreated(result)
              rememberNewKey({ name: result.key.name, secret: result.secret })
              notifications.show({ color: "teal", message: t("keys.created") })
              void refresh()
            }}
          />
        )}
      </Modal>
      <SecretModal created={created} onClose={() => setCreated(undefined)} />
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        title={<Text fw={700}>{t("keys.editLimitsTitle", { name: editing?.name ?? "" })}</Text>}
        centered
        size="lg"
      >
        {editing && (
          <KeyLimitsForm
            apiKey={editing}
            groupLimits={models.data?.groups.find((g) => g.name === editing.group)?.limits}
            groupModels={models.data?.groups.find((g) => g.name === editing.group)?.models.map((m) => m.id)}
            save={(body) => call((api) => api.keys.update({ params: { id: editing.id }, payload: body }))}
            onCancel={() => setEditing(undefined)}
            onDone={() => {
              setEditing(undefined)
              notifications.show({ color: "teal", message: t("keys.updated") })
              void refresh()
            }}
          />
        )}
      </Modal>
    </>
  )
}

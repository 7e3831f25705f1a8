/**
 * Administration of users: the list, creating users, and one user's page
 * (role, enable/disable, groups, rate limits, balance adjustments, keys and
 * their limits, usage, ledger).
 *
 * @since 0.1.0
 */
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Group,
  Modal,
  MultiSelect,
  Paper,
  PasswordInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Tabs,
  Text,
  TextInput,
  Title
} from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconArrowLeft, IconPlus, IconUsers } from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import { ConfirmButton, ConfirmDialog, PageHeader, StatCard } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, QueryState } from "../../components/States.tsx"
import { Usd } from "../../components/Usd.tsx"
import { WideTable } from "../../components/WideTable.tsx"
import { call, type Contract } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { addUsd, date, exactUsd, usd } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { sessionKey } from "../../lib/session.tsx"
import { useForm } from "../../lib/useForm.ts"
import { CreateKeyForm, KeyLimitsForm, KeysTable, SecretModal } from "../Keys.tsx"
import { limitsText } from "../Models.tsx"
import { RequestList } from "../Requests.tsx"
import { PagedLedger } from "../Usage.tsx"

/** A typed limit: empty is none (`null`), a whole number is itself, anything else is left for the Schema to refuse. */
const limit = (text: string): number | null | string =>
  text.trim() === "" ? null : Number.isInteger(Number(text)) ? Number(text) : text

const useGroupNames = () => {
  const groups = useQuery({ queryKey: ["admin", "groups"], queryFn: () => call((api) => api.catalog.listGroups()) })
  return (groups.data?.data ?? []).map((g) => g.name)
}

/** The create-user form. @category components */
export function CreateUserForm(
  { groups, onDone }: { readonly groups: ReadonlyArray<string>; readonly onDone: (user: Contract.AdminUser) => void }
) {
  const { t } = useI18n()
  const form = useForm({
    initial: {
      name: "",
      password: "",
      role: "user" as "user" | "admin",
      groups: [] as Array<string>,
      balance: "",
      rpm: "",
      tpm: "",
      concurrency: ""
    },
    schema: C.CreateUserRequest,
    toRequest: (v) => ({
      name: v.name.trim(),
      password: v.password,
      role: v.role,
      ...(v.groups.length > 0 ? { groups: v.groups } : {}),
      ...(v.balance.trim() !== "" ? { balance: v.balance.trim() } : {}),
      ...(v.rpm.trim() !== "" ? { rpm: limit(v.rpm) } : {}),
      ...(v.tpm.trim() !== "" ? { tpm: limit(v.tpm) } : {}),
      ...(v.concurrency.trim() !== "" ? { concurrency: limit(v.concurrency) } : {})
    }),
    onSubmit: async (body) => onDone(await call((api) => api.users.create({ payload: body })))
  })
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <TextInput label={t("login.username")} data-autofocus {...form.field("name")} />
        <PasswordInput label={t("admin.users.password")} autoComplete="new-password" {...form.field("password")} />
        <Select
          label={t("admin.users.role")}
          allowDeselect={false}
          data={[{ value: "user", label: t("admin.users.role.user") }, {
            value: "admin",
            label: t("admin.users.role.admin")
          }]}
          value={form.values.role}
          onChange={(v) => form.set("role", v === "admin" ? "admin" : "user")}
        />
        <MultiSelect
          label={t("admin.users.groups")}
          data={[...groups]}
          value={form.values.groups}
          error={form.errors.groups}
          onChange={(v) => form.set("groups", v)}
        />
        <TextInput
          label={t("admin.users.openingBalance")}
          placeholder="0"
          inputMode="decimal"
          {...form.field("balance")}
        />
        <SimpleGrid cols={3}>
          <TextInput
            label={t("admin.groups.rpm")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("rpm")}
          />
          <TextInput
            label={t("admin.groups.tpm")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("tpm")}
          />
          <TextInput
            label={t("admin.groups.concurrency")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("concurrency")}
          />
        </SimpleGrid>
        <Text size="xs" c="dimmed" mt={-8}>{t("admin.users.limitsHint")}</Text>
        <Group justify="flex-end">
          <Button type="submit" loading={form.submitting}>{t("common.create")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

/** The users list. @category pages */
export function AdminUsersPage() {
  const { t, locale } = useI18n()
  const client = useQueryClient()
  const users = useQuery({ queryKey: ["admin", "users"], queryFn: () => call((api) => api.users.list()) })
  const groups = useGroupNames()
  const [creating, setCreating] = useState(false)
  const [search, setSearch] = useState("")
  return (
    <>
      <PageHeader
        title={t("admin.users.title")}
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
            {t("admin.users.create")}
          </Button>
        }
      />
      <Paper withBorder radius="md" p="xs">
        <QueryState query={users}>
          {(data) => {
            const shown = data.data.filter((u) => u.name.toLowerCase().includes(search.toLowerCase()))
            return data.data.length === 0
              ? <EmptyState icon={<IconUsers size={28} />} title={t("admin.users.empty")} />
              : (
                <Stack gap="xs">
                  <TextInput
                    placeholder={t("common.search")}
                    value={search}
                    onChange={(e) => setSearch(e.currentTarget.value)}
                    maw={280}
                    m="xs"
                  />
                  <WideTable minWidth={720}>
                    <Table highlightOnHover verticalSpacing="sm" data-testid="users-table">
                      <Table.Thead>
                        <Table.Tr>
                          <Table.Th>{t("common.name")}</Table.Th>
                          <Table.Th>{t("admin.users.role")}</Table.Th>
                          <Table.Th>{t("admin.users.groups")}</Table.Th>
                          <Table.Th ta="right">{t("admin.users.balance")}</Table.Th>
                          <Table.Th ta="right">{t("admin.users.spentMonth")}</Table.Th>
                          <Table.Th ta="right">{t("admin.users.keys")}</Table.Th>
                          <Table.Th>{t("admin.users.limits")}</Table.Th>
                          <Table.Th>{t("keys.status")}</Table.Th>
                        </Table.Tr>
                      </Table.Thead>
                      <Table.Tbody>
                        {shown.map((u) => (
                          <Table.Tr key={u.id}>
                            <Table.Td>
                              <Anchor component={Link} to={`/admin/users/${u.id}`} fw={600} size="sm">{u.name}</Anchor>
                              <Text size="xs" c="dimmed">{date(u.createdAt, locale)}</Text>
                            </Table.Td>
                            <Table.Td>
                              <Badge variant="light" color={u.role === "admin" ? "grape" : "gray"}>
                                {t(`admin.users.role.${u.role}`)}
                              </Badge>
                            </Table.Td>
                            <Table.Td>
                              <Group gap={4}>
                                {u.groups.map((g) => <Badge key={g} size="sm" variant="outline">{g}</Badge>)}
                              </Group>
                            </Table.Td>
                            <Table.Td ta="right">
                              <Text size="sm" ff="monospace">
                                <Usd amount={u.balance} />
                              </Text>
                            </Table.Td>
                            <Table.Td ta="right">
                              <Text size="sm" ff="monospace">
                                <Usd amount={u.spentThisMonth} />
                              </Text>
                            </Table.Td>
                            <Table.Td ta="right">{u.keyCount}</Table.Td>
                            <Table.Td>
                              <Text size="sm">
                                {limitsText({ rpm: u.rpm, tpm: u.tpm, concurrency: u.concurrency }, t)}
                              </Text>
                            </Table.Td>
                            <Table.Td>
                              <Badge color={u.enabled ? "teal" : "gray"} variant="dot">
                                {u.enabled ? t("common.enabled") : t("common.disabled")}
                              </Badge>
                            </Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </WideTable>
                </Stack>
              )
          }}
        </QueryState>
      </Paper>
      <Modal
        opened={creating}
        onClose={() => setCreating(false)}
        title={<Text fw={700}>{t("admin.users.create")}</Text>}
        centered
      >
        <CreateUserForm
          groups={groups}
          onDone={() => {
            setCreating(false)
            notifications.show({ color: "teal", message: t("admin.users.created") })
            void client.invalidateQueries({ queryKey: ["admin", "users"] })
          }}
        />
      </Modal>
    </>
  )
}

/**
 * The balance form: add (or, negative, deduct) an amount, or set the balance
 * to an amount. The amount and reason are checked, a result below zero is
 * refused before asking, then a dialog says exactly what the balance becomes
 * and asks before anything changes; a refusal from the server shows its own
 * words in the dialog.
 *
 * @category components
 */
export function AdjustBalanceForm(
  { user, onDone }: {
    readonly user: Pick<Contract.AdminUser, "id" | "name" | "balance">
    readonly onDone: (balance: string) => void
  }
) {
  const { t } = useI18n()
  const [mode, setMode] = useState<"adjust" | "set">("adjust")
  const [pending, setPending] = useState<Contract.AdjustBalanceRequest | undefined>(undefined)
  /** The change to send: the amount typed, or (to set) the target less the balance now. */
  const change = (amount: string) => mode === "set" ? addUsd(amount, `-${user.balance}`.replace(/^--/, "")) : amount
  const form = useForm({
    initial: { amount: "", reason: "" },
    schema: C.AdjustBalanceRequest,
    toRequest: (v) => ({ amount: v.amount.trim() === "" ? "" : change(v.amount.trim()), reason: v.reason.trim() }),
    check: (v) => {
      const amount = v.amount.trim()
      if (!/^-?\d+(\.\d{1,9})?$/.test(amount)) return {}
      if (mode === "set" && amount.startsWith("-")) return { amount: t("admin.users.setNegative") }
      if (mode === "set" && addUsd(amount, `-${user.balance}`.replace(/^--/, "")) === "0") {
        return { amount: t("admin.users.setSame", { balance: exactUsd(user.balance) }) }
      }
      const after = addUsd(user.balance, change(amount))
      return after.startsWith("-")
        ? {
          amount: t("admin.users.belowZero", { after: `-${exactUsd(after.slice(1))}`, balance: exactUsd(user.balance) })
        }
        : {}
    },
    onSubmit: async (body) => setPending(body)
  })
  const taking = pending?.amount.startsWith("-") ?? false
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <SegmentedControl
          value={mode}
          onChange={(v) => setMode(v as "adjust" | "set")}
          data={[
            { value: "adjust", label: t("admin.users.modeAdjust") },
            { value: "set", label: t("admin.users.modeSet") }
          ]}
          data-testid="balance-mode"
        />
        <TextInput
          label={t(mode === "set" ? "admin.users.setAmount" : "admin.users.adjustAmount")}
          description={t("admin.users.balanceNow", { balance: exactUsd(user.balance) })}
          placeholder={mode === "set" ? "10" : "10 or -2.5"}
          inputMode="decimal"
          {...form.field("amount")}
        />
        <TextInput label={t("admin.users.adjustReason")} {...form.field("reason")} />
        <Group>
          <Button type="submit" loading={form.submitting}>
            {t(mode === "set" ? "admin.users.setBalance" : "admin.users.adjust")}
          </Button>
        </Group>
      </Stack>
      <ConfirmDialog
        opened={pending !== undefined}
        onClose={() => setPending(undefined)}
        title={t("admin.users.adjustConfirmTitle", { name: user.name })}
        body={pending === undefined ?
          "" :
          t(taking ? "admin.users.adjustConfirmTake" : "admin.users.adjustConfirmAdd", {
            amount: exactUsd(pending.amount.replace(/^-/, "")),
            balance: exactUsd(user.balance),
            after: exactUsd(addUsd(user.balance, pending.amount)),
            reason: pending.reason
          })}
        color={taking ? "red" : "indigo"}
        confirmLabel={t("admin.users.adjustConfirm")}
        onConfirm={async () => {
          const result = await call((api) => api.users.adjust({ params: { id: user.id }, payload: pending! }))
          form.reset()
          onDone(result.balance)
        }}
      />
    </form>
  )
}

/** An admin sets a user's new password (typed twice); the user's sessions end. @category components */
export function ResetPasswordForm(
  { user, onDone }: { readonly user: Pick<Contract.AdminUser, "id" | "name">; readonly onDone: () => void }
) {
  const { t } = useI18n()
  const form = useForm({
    initial: { password: "", repeat: "" },
    schema: C.UpdateUserRequest,
    toRequest: (v) => ({ password: v.password }),
    check: (v) => v.repeat !== v.password ? { repeat: t("admin.users.passwordsDiffer") } : {},
    onSubmit: async (body) => {
      await call((api) => api.users.update({ params: { id: user.id }, payload: body }))
      form.reset()
      onDone()
    }
  })
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate data-testid="reset-password">
      <Stack gap="xs">
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <PasswordInput label={t("admin.users.newPassword")} autoComplete="new-password" {...form.field("password")} />
        <PasswordInput label={t("admin.users.repeatPassword")} autoComplete="new-password" {...form.field("repeat")} />
        <Text size="xs" c="dimmed">{t("admin.users.resetPasswordHint")}</Text>
        <Group>
          <Button type="submit" size="xs" loading={form.submitting}>{t("admin.users.resetPassword")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

/** The form of a user's own limits, shared by all their keys. @category components */
export function UserLimitsForm({ user, onDone }: { readonly user: Contract.AdminUser; readonly onDone: () => void }) {
  const { t } = useI18n()
  const form = useForm({
    initial: {
      rpm: user.rpm?.toString() ?? "",
      tpm: user.tpm?.toString() ?? "",
      concurrency: user.concurrency?.toString() ?? ""
    },
    schema: C.UpdateUserRequest,
    toRequest: (v) => ({ rpm: limit(v.rpm), tpm: limit(v.tpm), concurrency: limit(v.concurrency) }),
    onSubmit: async (body) => {
      await call((api) => api.users.update({ params: { id: user.id }, payload: body }))
      onDone()
    }
  })
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack gap="xs">
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <SimpleGrid cols={3}>
          <TextInput
            label={t("admin.groups.rpm")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("rpm")}
          />
          <TextInput
            label={t("admin.groups.tpm")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("tpm")}
          />
          <TextInput
            label={t("admin.groups.concurrency")}
            placeholder={t("common.unlimited")}
            inputMode="numeric"
            {...form.field("concurrency")}
          />
        </SimpleGrid>
        <Text size="xs" c="dimmed">{t("admin.users.limitsHint")}</Text>
        <Group>
          <Button type="submit" size="xs" loading={form.submitting}>{t("common.save")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

/** One user's page. @category pages */
export function AdminUserPage() {
  const { t } = useI18n()
  const { id = "" } = useParams()
  const navigate = useNavigate()
  const client = useQueryClient()
  const user = useQuery({
    queryKey: ["admin", "user", id],
    queryFn: () => call((api) => api.users.get({ params: { id } }))
  })
  const keys = useQuery({
    queryKey: ["admin", "user", id, "keys"],
    queryFn: () => call((api) => api.keys.userKeys({ params: { id } }))
  })
  const [confirmDisable, setConfirmDisable] = useState(false)
  const groups = useGroupNames()
  const [editingKey, setEditingKey] = useState<Contract.ApiKey | undefined>(undefined)
  const [creatingKey, setCreatingKey] = useState(false)
  const [createdKey, setCreatedKey] = useState<Contract.CreatedKey | undefined>(undefined)
  // What the user's key form may offer: their groups and the models each reaches.
  const userModels = useQuery({
    queryKey: ["admin", "user", id, "models"],
    queryFn: () => call((api) => api.keys.userModels({ params: { id } }))
  })
  const refresh = () => client.invalidateQueries({ queryKey: ["admin"] })
  const update = async (body: Contract.UpdateUserRequest) => {
    try {
      await call((api) => api.users.update({ params: { id }, payload: body }))
      notifications.show({ color: "teal", message: t("common.saved") })
      await refresh()
    } catch (error) {
      notifications.show({ color: "red", message: errorMessage(error, t) })
    }
  }
  return (
    <>
      <Button
        component={Link}
        to="/admin/users"
        variant="subtle"
        leftSection={<IconArrowLeft size={16} />}
        mb="sm"
        px={0}
      >
        {t("admin.users.back")}
      </Button>
      <QueryState query={user}>
        {(u) => (
          <Stack gap="lg">
            <Group justify="space-between" wrap="wrap">
              <Group gap="sm">
                <Title order={2}>{u.name}</Title>
                <Badge variant="light" color={u.role === "admin" ? "grape" : "gray"}>
                  {t(`admin.users.role.${u.role}`)}
                </Badge>
                <Badge color={u.enabled ? "teal" : "gray"} variant="dot">
                  {u.enabled ? t("common.enabled") : t("common.disabled")}
                </Badge>
              </Group>
              <Group gap="xs">
                {u.enabled
                  ? (
                    <ConfirmButton
                      title={t("admin.users.disableTitle", { name: u.name })}
                      body={t("admin.users.disableBody")}
                      confirmLabel={t("common.disable")}
                      onConfirm={() => update({ enabled: false })}
                      buttonProps={{ variant: "light" }}
                    >
                      {t("common.disable")}
                    </ConfirmButton>
                  )
                  : (
                    <Button size="xs" variant="light" color="teal" onClick={() => void update({ enabled: true })}>
                      {t("common.enable")}
                    </Button>
                  )}
                <ConfirmButton
                  title={t("admin.users.deleteTitle", { name: u.name })}
                  body={t("admin.users.deleteBody")}
                  confirmLabel={t("admin.users.delete")}
                  buttonProps={{ variant: "light" }}
                  onConfirm={async () => {
                    await call((api) => api.users.delete({ params: { id: u.id } }))
                    notifications.show({ color: "teal", message: t("admin.users.deleted", { name: u.name }) })
                    await client.invalidateQueries({ queryKey: ["admin"] })
                    await navigate("/admin/users")
                  }}
                >
                  {t("admin.users.delete")}
                </ConfirmButton>
              </Group>
            </Group>
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              {/* Every digit: an admin setting a balance must see what it is, not $5.00 for $4.99996895. */}
              <StatCard label={t("admin.users.balance")} value={exactUsd(u.balance)} testId="user-balance" />
              <StatCard label={t("admin.users.spentMonth")} value={<Usd amount={u.spentThisMonth} />} />
              <StatCard label={t("admin.users.keys")} value={String(u.keyCount)} />
            </SimpleGrid>
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Paper withBorder p="md" radius="md">
                <Text fw={600} mb="sm">{t("admin.users.adjust")}</Text>
                <AdjustBalanceForm
                  user={u}
                  onDone={(balance) => {
                    notifications.show({ color: "teal", message: t("admin.users.adjusted", { balance: usd(balance) }) })
                    void refresh()
                    void client.invalidateQueries({ queryKey: sessionKey })
                  }}
                />
                <Text fw={600} mt="lg" mb="sm">{t("admin.users.resetPassword")}</Text>
                <ResetPasswordForm
                  user={u}
                  onDone={() =>
                    notifications.show({ color: "teal", message: t("admin.users.passwordReset", { name: u.name }) })}
                />
              </Paper>
              <Paper withBorder p="md" radius="md">
                <Stack>
                  <Select
                    label={t("admin.users.role")}
                    allowDeselect={false}
                    data={[{ value: "user", label: t("admin.users.role.user") }, {
                      value: "admin",
                      label: t("admin.users.role.admin")
                    }]}
                    value={u.role}
                    onChange={(v) => void update({ role: v === "admin" ? "admin" : "user" })}
                  />
                  <MultiSelect
                    label={t("admin.users.groups")}
                    data={groups}
                    value={[...u.groups]}
                    onChange={(v) => void update({ groups: v })}
                  />
                  <Switch
                    label={t("common.enabled")}
                    checked={u.enabled}
                    onChange={(e) => e.currentTarget.checked ? void update({ enabled: true }) : setConfirmDisable(true)}
                  />
                  <ConfirmDialog
                    opened={confirmDisable}
                    onClose={() => setConfirmDisable(false)}
                    title={t("admin.users.disableTitle", { name: u.name })}
                    body={t("admin.users.disableBody")}
                    confirmLabel={t("common.disable")}
                    onConfirm={() => update({ enabled: false })}
                  />
                  <Text fw={600} size="sm" mt="xs">{t("admin.users.limits")}</Text>
                  <UserLimitsForm
                    key={`${u.id}:${u.rpm}:${u.tpm}:${u.concurrency}`}
                    user={u}
                    onDone={() => {
                      notifications.show({ color: "teal", message: t("common.saved") })
                      void refresh()
                    }}
                  />
                </Stack>
              </Paper>
            </SimpleGrid>
            <Tabs defaultValue="keys">
              <Tabs.List>
                <Tabs.Tab value="keys">{t("nav.keys")}</Tabs.Tab>
                <Tabs.Tab value="usage">{t("admin.users.usage")}</Tabs.Tab>
                <Tabs.Tab value="ledger">{t("admin.users.ledger")}</Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="keys" pt="sm">
                <Group justify="flex-end" mb="xs">
                  <Button
                    size="xs"
                    leftSection={<IconPlus size={14} />}
                    disabled={userModels.data === undefined}
                    onClick={() => setCreatingKey(true)}
                  >
                    {t("admin.users.createKey")}
                  </Button>
                </Group>
                <QueryState query={keys}>
                  {(d) =>
                    d.data.length === 0
                      ? <EmptyState title={t("keys.empty")} />
                      : (
                        <KeysTable
                          keys={d.data}
                          onEditLimits={setEditingKey}
                          onDelete={async (key) => {
                            await call((api) => api.keys.adminDelete({ params: { id: key.id } }))
                            await refresh()
                          }}
                        />
                      )}
                </QueryState>
              </Tabs.Panel>
              <Tabs.Panel value="usage" pt="sm">
                <RequestList
                  queryKey={["admin", "user", id, "usage"]}
                  load={(cursor) =>
                    call((api) => api.usage.userUsage({ params: { id }, query: { limit: 50, cursor } }))}
                  admin
                  live={false}
                />
              </Tabs.Panel>
              <Tabs.Panel value="ledger" pt="sm">
                <PagedLedger
                  queryKey={["admin", "user", id, "ledger"]}
                  load={(cursor) =>
                    call((api) => api.usage.userLedger({ params: { id }, query: { limit: 50, cursor } }))}
                />
              </Tabs.Panel>
            </Tabs>
          </Stack>
        )}
      </QueryState>
      <Modal
        opened={creatingKey}
        onClose={() => setCreatingKey(false)}
        title={<Text fw={700}>{t("admin.users.createKeyTitle", { name: user.data?.name ?? "" })}</Text>}
        centered
        size="lg"
      >
        {creatingKey && userModels.data && (
          <CreateKeyForm
            groups={userModels.data.groups}
            create={(payload) => call((api) => api.keys.adminCreate({ params: { id }, payload }))}
            onCancel={() => setCreatingKey(false)}
            onCreated={(made) => {
              setCreatingKey(false)
              setCreatedKey(made)
              void refresh()
            }}
          />
        )}
      </Modal>
      <SecretModal created={createdKey} onClose={() => setCreatedKey(undefined)} />
      <Modal
        opened={editingKey !== undefined}
        onClose={() => setEditingKey(undefined)}
        title={<Text fw={700}>{t("keys.editLimitsTitle", { name: editingKey?.name ?? "" })}</Text>}
        centered
        size="lg"
      >
        {editingKey && (
          <KeyLimitsForm
            apiKey={editingKey}
            groupLimits={userModels.data?.groups.find((g) => g.name === editingKey.group)?.limits}
            groupModels={userModels.data?.groups.find((g) => g.name === editingKey.group)?.models.map((m) => m.id)}
            save={(body) => call((api) => api.keys.adminUpdate({ params: { id: editingKey.id }, payload: body }))}
            onCancel={() => setEditingKey(undefined)}
            onDone={() => {
              setEditingKey(undefined)
              notifications.show({ color: "teal", message: t("keys.updated") })
              void refresh()
            }}
          />
        )}
      </Modal>
    </>
  )
}

/**
 * Administration of models: their list prices, limits, and what the gateway
 * needs to know of them (description, embedding model, reasoning model,
 * whether the upstream takes `reasoning_content`; docs/configuration.md).
 *
 * @since 0.1.0
 */
import {
  Alert,
  Badge,
  Button,
  Group,
  Modal,
  NumberInput,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  Textarea,
  TextInput,
  Title
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
import { price, tokens } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"

const orNull = (text: string): string | null => text.trim() === "" ? null : text.trim()

/** A model's form values from a preset of the shipped price table. */
const fromPreset = (preset: Contract.PricePreset) => ({
  displayName: preset.displayName,
  input: preset.prices.input ?? "",
  output: preset.prices.output ?? "",
  cachedInput: preset.prices.cachedInput ?? "",
  cacheWrite: preset.prices.cacheWrite ?? "",
  perRequest: preset.prices.perRequest ?? "",
  free: preset.prices.free,
  inputTokenLimit: preset.inputTokenLimit as number | string,
  outputTokenLimit: preset.outputTokenLimit as number | string,
  embedding: preset.embedding,
  reasoning: preset.reasoning
})

/**
 * The model form: a new model (optionally for an id a channel already serves,
 * prefilled from the price table when the table knows it), or an existing one.
 *
 * @category components
 */
export function ModelForm({ model, seedId, presets, onDone }: {
  readonly model: Contract.AdminModel | undefined
  /** The id of a new model (an unpriced channel model). */
  readonly seedId?: string | undefined
  readonly presets?: Contract.PricePresets | undefined
  readonly onDone: () => void
}) {
  const { t } = useI18n()
  const seeded = model === undefined && seedId !== undefined ? presets?.data.find((p) => p.id === seedId) : undefined
  const form = useForm({
    initial: {
      id: model?.id ?? seedId ?? "",
      displayName: model?.displayName ?? "",
      input: model?.prices.input ?? "",
      output: model?.prices.output ?? "",
      cachedInput: model?.prices.cachedInput ?? "",
      cacheWrite: model?.prices.cacheWrite ?? "",
      perRequest: model?.prices.perRequest ?? "",
      free: model?.prices.free ?? false,
      inputTokenLimit: (model?.inputTokenLimit ?? C.modelDefaults.inputTokenLimit) as number | string,
      outputTokenLimit: (model?.outputTokenLimit ?? C.modelDefaults.outputTokenLimit) as number | string,
      description: model?.description ?? "",
      embedding: model?.embedding ?? false,
      reasoning: model?.reasoning ?? false,
      reasoningContent: model?.reasoningContent ?? false,
      ...(seeded === undefined ? {} : fromPreset(seeded))
    },
    schema: C.UpsertModelRequest,
    toRequest: (v) => ({
      id: v.id.trim(),
      ...(v.displayName.trim() !== "" ? { displayName: v.displayName.trim() } : {}),
      prices: {
        input: orNull(v.input),
        output: orNull(v.output),
        cachedInput: orNull(v.cachedInput),
        cacheWrite: orNull(v.cacheWrite),
        perRequest: orNull(v.perRequest),
        free: v.free
      },
      inputTokenLimit: Number(v.inputTokenLimit),
      outputTokenLimit: Number(v.outputTokenLimit),
      // The form shows every field, so it sends every field: an emptied description is cleared (null).
      description: orNull(v.description),
      embedding: v.embedding,
      reasoning: v.reasoning,
      reasoningContent: v.reasoningContent
    }),
    onSubmit: async (body) => {
      await call((api) => api.catalog.upsertModel({ payload: body }))
      onDone()
    }
  })
  const applyPreset = (id: string | null) => {
    const preset = presets?.data.find((p) => p.id === id)
    if (preset === undefined) return
    for (const [key, value] of Object.entries(fromPreset(preset))) {
      form.set(key as keyof typeof form.values, value as never)
    }
  }
  const priceError = (key: string) => form.errors[key] ?? form.errors.prices
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        {presets !== undefined && (
          <Select
            label={t("admin.models.preset")}
            description={t("admin.models.presetHint", { date: presets.asOf })}
            placeholder={presets.data.some((p) => p.id === form.values.id)
              ? form.values.id
              : t("admin.models.presetNone")}
            searchable
            clearable
            data={presets.data.map((p) => ({ value: p.id, label: `${p.id} (${p.provider})` }))}
            value={null}
            onChange={applyPreset}
            data-testid="preset-select"
          />
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("admin.models.id")} disabled={model !== undefined} data-autofocus {...form.field("id")} />
          <TextInput label={t("admin.models.displayName")} {...form.field("displayName")} />
        </SimpleGrid>
        <SimpleGrid cols={{ base: 2, sm: 5 }}>
          <TextInput
            label={t("models.input")}
            placeholder="—"
            {...form.field("input")}
            error={form.values.input !== "" ? priceError("input") : undefined}
          />
          <TextInput
            label={t("models.output")}
            placeholder="—"
            {...form.field("output")}
            error={form.values.output !== "" ? priceError("output") : undefined}
          />
          <TextInput label={t("models.cachedInput")} placeholder="—" {...form.field("cachedInput")} />
          <TextInput label={t("models.cacheWrite")} placeholder="—" {...form.field("cacheWrite")} />
          <TextInput label={t("models.perRequest")} placeholder="—" {...form.field("perRequest")} />
        </SimpleGrid>
        <Switch
          label={t("common.free")}
          checked={form.values.free}
          onChange={(e) => form.set("free", e.currentTarget.checked)}
        />
        <SimpleGrid cols={2}>
          <NumberInput
            label={t("admin.models.inputLimit")}
            min={1}
            value={form.values.inputTokenLimit}
            error={form.errors.inputTokenLimit}
            onChange={(v) => form.set("inputTokenLimit", v)}
            thousandSeparator=","
          />
          <NumberInput
            label={t("admin.models.outputLimit")}
            min={1}
            value={form.values.outputTokenLimit}
            error={form.errors.outputTokenLimit}
            onChange={(v) => form.set("outputTokenLimit", v)}
            thousandSeparator=","
          />
        </SimpleGrid>
        <Textarea
          label={t("admin.models.description")}
          description={t("admin.models.descriptionHint")}
          autosize
          minRows={1}
          maxRows={4}
          {...form.field("description")}
        />
        <Stack gap="xs">
          <Switch
            label={t("admin.models.embedding")}
            description={t("admin.models.embeddingHint")}
            checked={form.values.embedding}
            error={form.errors.embedding}
            onChange={(e) => form.set("embedding", e.currentTarget.checked)}
          />
          <Switch
            label={t("admin.models.reasoning")}
            description={t("admin.models.reasoningHint")}
            checked={form.values.reasoning}
            error={form.errors.reasoning}
            onChange={(e) => form.set("reasoning", e.currentTarget.checked)}
          />
          <Switch
            label={t("admin.models.reasoningContent")}
            description={t("admin.models.reasoningContentHint")}
            checked={form.values.reasoningContent}
            error={form.errors.reasoningContent}
            onChange={(e) => form.set("reasoningContent", e.currentTarget.checked)}
          />
        </Stack>
        <Group justify="flex-end">
          <Button type="submit" loading={form.submitting}>{t("common.save")}</Button>
        </Group>
      </Stack>
    </form>
  )
}

/** The models page. @category pages */
export function AdminModelsPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const models = useQuery({ queryKey: ["admin", "models"], queryFn: () => call((api) => api.catalog.listModels()) })
  const presets = useQuery({
    queryKey: ["admin", "price-presets"],
    queryFn: () => call((api) => api.catalog.pricePresets()),
    staleTime: Infinity
  })
  const [editing, setEditing] = useState<Contract.AdminModel | { readonly seedId: string | undefined } | undefined>(
    undefined
  )
  const refresh = () => client.invalidateQueries()
  const p = (v: string | null) => v === null ? "—" : price(v)
  const unpriced = models.data?.unpriced ?? []
  return (
    <>
      <PageHeader
        title={t("admin.models.title")}
        subtitle={t("admin.models.subtitle")}
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing({ seedId: undefined })}>
            {t("admin.models.create")}
          </Button>
        }
      />
      {unpriced.length > 0 && (
        <Alert color="orange" mb="md" title={t("admin.models.unpriced")} data-testid="unpriced-models">
          <Text size="sm" mb="xs">{t("admin.models.unpricedHint")}</Text>
          <Stack gap={6}>
            {unpriced.map((m) => (
              <Group key={m.id} justify="space-between" wrap="nowrap" data-unpriced={m.id}>
                <div>
                  <Text ff="monospace" size="sm" fw={600}>{m.id}</Text>
                  <Text size="xs" c="dimmed">{t("admin.models.servedBy", { channels: m.channels.join(", ") })}</Text>
                </div>
                <Button
                  size="xs"
                  onClick={() =>
                    setEditing(models.data?.data.find((row) => row.id === m.id) ?? { seedId: m.id })}
                >
                  {t("admin.models.setPrice")}
                </Button>
              </Group>
            ))}
          </Stack>
        </Alert>
      )}
      <Paper withBorder radius="md" p="xs">
        <QueryState query={models}>
          {(data) =>
            data.data.length === 0
              ? (
                <EmptyState
                  title={t("admin.models.empty")}
                  action={<Button onClick={() => setEditing({ seedId: undefined })}>{t("admin.models.create")}</Button>}
                />
              )
              : (
                <WideTable minWidth={760} stickyLast>
                  <Table verticalSpacing="sm" striped highlightOnHover data-testid="admin-models-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>{t("usage.model")}</Table.Th>
                        <Table.Th ta="right">{t("models.input")}</Table.Th>
                        <Table.Th ta="right">{t("models.output")}</Table.Th>
                        <Table.Th ta="right">{t("models.cachedInput")}</Table.Th>
                        <Table.Th ta="right">{t("models.cacheWrite")}</Table.Th>
                        <Table.Th ta="right">{t("models.perRequest")}</Table.Th>
                        <Table.Th ta="right">{t("models.context")}</Table.Th>
                        <Table.Th>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((m) => (
                        <Table.Tr key={m.id} data-model={m.id}>
                          <Table.Td>
                            <Group gap={6}>
                              <Text fw={600} size="sm" ff="monospace">{m.id}</Text>
                              {m.prices.free && <Badge color="teal" size="xs">{t("common.free")}</Badge>}
                              {m.embedding && (
                                <Badge color="grape" variant="light" size="xs">
                                  {t("admin.models.badgeEmbedding")}
                                </Badge>
                              )}
                              {m.reasoning && (
                                <Badge color="indigo" variant="light" size="xs">
                                  {t("admin.models.badgeReasoning")}
                                </Badge>
                              )}
                              {m.reasoningContent && (
                                <Badge color="gray" variant="light" size="xs" ff="monospace">reasoning_content</Badge>
                              )}
                            </Group>
                            <Text size="xs" c="dimmed">{m.displayName}</Text>
                            {/* At a phone's width the price columns sit under the pinned actions: the prices show here. */}
                            <Text size="xs" ff="monospace" hiddenFrom="sm" data-testid="model-price">
                              {t("models.input")} {p(m.prices.input)} · {t("models.output")} {p(m.prices.output)}
                            </Text>
                            {m.description !== null && (
                              <Text size="xs" c="dimmed" lineClamp={2} maw={360}>{m.description}</Text>
                            )}
                          </Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.input)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.output)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.cachedInput)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.cacheWrite ?? null)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.perRequest)}</Table.Td>
                          <Table.Td ta="right">{tokens(m.inputTokenLimit)} / {tokens(m.outputTokenLimit)}</Table.Td>
                          <Table.Td>
                            <Group gap={4} wrap="nowrap">
                              <Button size="xs" variant="subtle" onClick={() => setEditing(m)}>
                                {t("common.edit")}
                              </Button>
                              <ConfirmButton
                                title={t("admin.models.deleteTitle", { name: m.id })}
                                confirmLabel={t("common.delete")}
                                onConfirm={async () => {
                                  await call((api) => api.catalog.deleteModel({ params: { id: m.id } }))
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
      <AliasesPanel models={[...(models.data?.data.map((m) => m.id) ?? []), ...unpriced.map((m) => m.id)]} />
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        title={
          <Text fw={700}>
            {editing === undefined || "seedId" in editing ? editing?.seedId ?? t("admin.models.create") : editing.id}
          </Text>
        }
        centered
        size="lg"
      >
        {editing !== undefined && (
          <ModelForm
            model={"seedId" in editing ? undefined : editing}
            seedId={"seedId" in editing ? editing.seedId : undefined}
            presets={presets.data}
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

/**
 * The aliases: names clients may use for a model, in matching order, with a
 * form to add one and a delete per row.
 *
 * @category components
 */
export function AliasesPanel({ models }: { readonly models: ReadonlyArray<string> }) {
  const { t } = useI18n()
  const client = useQueryClient()
  const aliases = useQuery({ queryKey: ["admin", "aliases"], queryFn: () => call((api) => api.catalog.listAliases()) })
  const form = useForm({
    initial: { pattern: "", target: "" },
    schema: C.SetAliasRequest,
    toRequest: (v) => ({ pattern: v.pattern.trim(), target: v.target }),
    onSubmit: async (body) => {
      await call((api) => api.catalog.setAlias({ payload: body }))
      form.reset()
      await client.invalidateQueries({ queryKey: ["admin", "aliases"] })
    }
  })
  return (
    <Paper withBorder radius="md" p="md" mt="lg">
      <Title order={4}>{t("admin.aliases.title")}</Title>
      <Text size="sm" c="dimmed" mb="sm">{t("admin.aliases.hint")}</Text>
      <form onSubmit={(e) => void form.submit(e)} noValidate>
        {form.formError !== undefined && <Alert color="red" mb="xs">{errorMessage(form.formError, t)}</Alert>}
        <Group align="flex-start" gap="xs" mb="sm">
          <TextInput
            label={t("admin.aliases.pattern")}
            placeholder="gpt-4o-*"
            ff="monospace"
            {...form.field("pattern")}
          />
          <Select
            label={t("admin.aliases.target")}
            searchable
            data={[...new Set(models)]}
            value={form.values.target === "" ? null : form.values.target}
            error={form.errors.target}
            onChange={(v) => form.set("target", v ?? "")}
            data-testid="alias-target"
          />
          <Button type="submit" mt={25} loading={form.submitting}>{t("admin.aliases.add")}</Button>
        </Group>
      </form>
      <QueryState query={aliases}>
        {(data) =>
          data.data.length === 0
            ? <Text size="sm" c="dimmed">{t("admin.aliases.empty")}</Text>
            : (
              <Table verticalSpacing="xs" data-testid="aliases-table">
                <Table.Tbody>
                  {data.data.map((alias) => (
                    <Table.Tr key={alias.pattern}>
                      <Table.Td>
                        <Text ff="monospace" size="sm">{alias.pattern}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="sm">→ {alias.target}</Text>
                      </Table.Td>
                      <Table.Td ta="right">
                        <ConfirmButton
                          title={t("admin.aliases.deleteTitle", { name: alias.pattern })}
                          confirmLabel={t("common.delete")}
                          onConfirm={async () => {
                            await call((api) => api.catalog.deleteAlias({ query: { pattern: alias.pattern } }))
                            await client.invalidateQueries({ queryKey: ["admin", "aliases"] })
                          }}
                        >
                          {t("common.delete")}
                        </ConfirmButton>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
      </QueryState>
    </Paper>
  )
}

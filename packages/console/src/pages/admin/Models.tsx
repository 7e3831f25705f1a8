/**
 * Administration of models: their list prices, limits, and what the gateway
 * needs to know of them (description, embedding model, reasoning model,
 * whether the upstream takes `reasoning_content`; docs/configuration.md).
 *
 * @since 0.1.0
 */
import { Alert, Badge, Button, Group, Modal, NumberInput, Paper, SimpleGrid, Stack, Switch, Table, Text, Textarea, TextInput } from "@mantine/core"
import { notifications } from "@mantine/notifications"
import { IconPlus } from "@tabler/icons-react"
import { useQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { ConfirmButton, PageHeader } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, QueryState } from "../../components/States.tsx"
import { call, type Contract } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { price, tokens } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"

const orNull = (text: string): string | null => text.trim() === "" ? null : text.trim()

function ModelForm({ model, onDone }: { readonly model: Contract.AdminModel | undefined; readonly onDone: () => void }) {
  const { t } = useI18n()
  const form = useForm({
    initial: {
      id: model?.id ?? "",
      displayName: model?.displayName ?? "",
      input: model?.prices.input ?? "",
      output: model?.prices.output ?? "",
      cachedInput: model?.prices.cachedInput ?? "",
      perRequest: model?.prices.perRequest ?? "",
      free: model?.prices.free ?? false,
      inputTokenLimit: (model?.inputTokenLimit ?? 128000) as number | string,
      outputTokenLimit: (model?.outputTokenLimit ?? 8192) as number | string,
      description: model?.description ?? "",
      embedding: model?.embedding ?? false,
      reasoning: model?.reasoning ?? false,
      reasoningContent: model?.reasoningContent ?? false
    },
    schema: C.UpsertModelRequest,
    toRequest: (v) => ({
      id: v.id.trim(),
      ...(v.displayName.trim() !== "" ? { displayName: v.displayName.trim() } : {}),
      prices: { input: orNull(v.input), output: orNull(v.output), cachedInput: orNull(v.cachedInput), perRequest: orNull(v.perRequest), free: v.free },
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
  const priceError = (key: string) => form.errors[key] ?? form.errors.prices
  return (
    <form onSubmit={(e) => void form.submit(e)} noValidate>
      <Stack>
        {form.formError !== undefined && <Alert color="red">{errorMessage(form.formError, t)}</Alert>}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("admin.models.id")} disabled={model !== undefined} data-autofocus {...form.field("id")} />
          <TextInput label={t("admin.models.displayName")} {...form.field("displayName")} />
        </SimpleGrid>
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <TextInput label={t("models.input")} placeholder="—" {...form.field("input")} error={form.values.input !== "" ? priceError("input") : undefined} />
          <TextInput label={t("models.output")} placeholder="—" {...form.field("output")} error={form.values.output !== "" ? priceError("output") : undefined} />
          <TextInput label={t("models.cachedInput")} placeholder="—" {...form.field("cachedInput")} />
          <TextInput label={t("models.perRequest")} placeholder="—" {...form.field("perRequest")} />
        </SimpleGrid>
        <Switch label={t("common.free")} checked={form.values.free} onChange={(e) => form.set("free", e.currentTarget.checked)} />
        <SimpleGrid cols={2}>
          <NumberInput label={t("admin.models.inputLimit")} min={1} value={form.values.inputTokenLimit} error={form.errors.inputTokenLimit} onChange={(v) => form.set("inputTokenLimit", v)} thousandSeparator="," />
          <NumberInput label={t("admin.models.outputLimit")} min={1} value={form.values.outputTokenLimit} error={form.errors.outputTokenLimit} onChange={(v) => form.set("outputTokenLimit", v)} thousandSeparator="," />
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
        <Group justify="flex-end"><Button type="submit" loading={form.submitting}>{t("common.save")}</Button></Group>
      </Stack>
    </form>
  )
}

/** The models page. @category pages */
export function AdminModelsPage() {
  const { t } = useI18n()
  const client = useQueryClient()
  const models = useQuery({ queryKey: ["admin", "models"], queryFn: () => call((api) => api.catalog.listModels()) })
  const [editing, setEditing] = useState<Contract.AdminModel | "new" | undefined>(undefined)
  const refresh = () => client.invalidateQueries()
  const p = (v: string | null) => v === null ? "—" : price(v)
  return (
    <>
      <PageHeader
        title={t("admin.models.title")}
        subtitle={t("admin.models.subtitle")}
        actions={<Button leftSection={<IconPlus size={16} />} onClick={() => setEditing("new")}>{t("admin.models.create")}</Button>}
      />
      <Paper withBorder radius="md" p="xs">
        <QueryState query={models}>
          {(data) =>
            data.data.length === 0
              ? <EmptyState title={t("admin.models.empty")} action={<Button onClick={() => setEditing("new")}>{t("admin.models.create")}</Button>} />
              : (
                <Table.ScrollContainer minWidth={760}>
                  <Table verticalSpacing="sm" striped highlightOnHover data-testid="admin-models-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>{t("usage.model")}</Table.Th>
                        <Table.Th ta="right">{t("models.input")}</Table.Th>
                        <Table.Th ta="right">{t("models.output")}</Table.Th>
                        <Table.Th ta="right">{t("models.cachedInput")}</Table.Th>
                        <Table.Th ta="right">{t("models.perRequest")}</Table.Th>
                        <Table.Th ta="right">{t("models.context")}</Table.Th>
                        <Table.Th>{t("common.actions")}</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.data.map((m) => (
                        <Table.Tr key={m.id}>
                          <Table.Td>
                            <Group gap={6}>
                              <Text fw={600} size="sm" ff="monospace">{m.id}</Text>
                              {m.prices.free && <Badge color="teal" size="xs">{t("common.free")}</Badge>}
                              {m.embedding && <Badge color="grape" variant="light" size="xs">{t("admin.models.badgeEmbedding")}</Badge>}
                              {m.reasoning && <Badge color="indigo" variant="light" size="xs">{t("admin.models.badgeReasoning")}</Badge>}
                              {m.reasoningContent && <Badge color="gray" variant="light" size="xs" ff="monospace">reasoning_content</Badge>}
                            </Group>
                            <Text size="xs" c="dimmed">{m.displayName}</Text>
                            {m.description !== null && <Text size="xs" c="dimmed" lineClamp={2} maw={360}>{m.description}</Text>}
                          </Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.input)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.output)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.cachedInput)}</Table.Td>
                          <Table.Td ta="right" ff="monospace">{p(m.prices.perRequest)}</Table.Td>
                          <Table.Td ta="right">{tokens(m.inputTokenLimit)} / {tokens(m.outputTokenLimit)}</Table.Td>
                          <Table.Td>
                            <Group gap={4} wrap="nowrap">
                              <Button size="xs" variant="subtle" onClick={() => setEditing(m)}>{t("common.edit")}</Button>
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
                </Table.ScrollContainer>
              )}
        </QueryState>
      </Paper>
      <Modal opened={editing !== undefined} onClose={() => setEditing(undefined)} title={<Text fw={700}>{editing === "new" ? t("admin.models.create") : editing?.id}</Text>} centered size="lg">
        {editing !== undefined && (
          <ModelForm
            model={editing === "new" ? undefined : editing}
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

/**
 * Administration of redemption codes: generate a batch (shown in full once),
 * list with who redeemed them, export.
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
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput
} from "@mantine/core"
import { IconDownload, IconTicket } from "@tabler/icons-react"
import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { PageHeader, Snippet } from "../../components/Bits.tsx"
import { EmptyState, errorMessage, ErrorState, Loading } from "../../components/States.tsx"
import { WideTable } from "../../components/WideTable.tsx"
import { call, type Contract, urls } from "../../lib/api.ts"
import { Contract as C } from "../../lib/contract.ts"
import { dateTime, usd } from "../../lib/format.ts"
import { useI18n } from "../../lib/i18n.tsx"
import { useForm } from "../../lib/useForm.ts"

/** The generate-codes form. @category components */
export function GenerateCodesForm({ onGenerated }: { readonly onGenerated: (codes: Contract.GeneratedCodes) => void }) {
  const { t } = useI18n()
  const form = useForm({
    initial: { count: 10 as number | string, amount: "" },
    schema: C.GenerateCodesRequest,
    toRequest: (v) => ({ count: Number(v.count), amount: v.amount.trim() }),
    onSubmit: async (body) => onGenerated(await call((api) => api.codes.generate({ payload: body })))
  })
  return (
    <Paper withBorder radius="md" p="md">
      <form onSubmit={(e) => void form.submit(e)} noValidate>
        <Group align="flex-start" wrap="wrap">
          <NumberInput
            label={t("admin.codes.count")}
            min={1}
            max={1000}
            value={form.values.count}
            error={form.errors.count}
            onChange={(v) => form.set("count", v)}
            w={140}
            allowDecimal={false}
          />
          <TextInput
            label={t("admin.codes.amount")}
            placeholder="10"
            inputMode="decimal"
            w={200}
            {...form.field("amount")}
          />
          <Button type="submit" mt={25} loading={form.submitting} leftSection={<IconTicket size={16} />}>
            {t("admin.codes.generate")}
          </Button>
        </Group>
        {form.formError !== undefined && <Alert color="red" mt="sm">{errorMessage(form.formError, t)}</Alert>}
      </form>
    </Paper>
  )
}

/** The codes page. @category pages */
export function AdminCodesPage() {
  const { t, locale } = useI18n()
  const client = useQueryClient()
  const [status, setStatus] = useState<"all" | "redeemed" | "unused">("all")
  const [generated, setGenerated] = useState<Contract.GeneratedCodes | undefined>(undefined)
  const filter: Contract.CodesQuery = status === "all" ? {} : { status }
  const codes = useInfiniteQuery({
    queryKey: ["admin", "codes", status],
    queryFn: ({ pageParam }) => call((api) => api.codes.list({ query: { ...filter, limit: 100, cursor: pageParam } })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined
  })
  const rows = codes.data?.pages.flatMap((p) => p.data) ?? []
  return (
    <>
      <PageHeader
        title={t("admin.codes.title")}
        actions={
          <Button
            component="a"
            href={urls.codes.csv({ query: filter })}
            download="codes.csv"
            variant="default"
            leftSection={<IconDownload size={16} />}
          >
            {t("common.exportCsv")}
          </Button>
        }
      />
      <Stack>
        <GenerateCodesForm
          onGenerated={(result) => {
            setGenerated(result)
            void client.invalidateQueries({ queryKey: ["admin", "codes"] })
          }}
        />
        <SegmentedControl
          w="fit-content"
          value={status}
          onChange={setStatus}
          data={[
            { value: "all", label: t("common.all") },
            { value: "unused", label: t("admin.codes.unused") },
            { value: "redeemed", label: t("admin.codes.redeemed") }
          ]}
        />
        <Paper withBorder radius="md" p="xs">
          {codes.isPending
            ? <Loading />
            : codes.error
            ? <ErrorState error={codes.error} onRetry={() => void codes.refetch()} />
            : rows.length === 0
            ? <EmptyState icon={<IconTicket size={28} />} title={t("admin.codes.empty")} />
            : (
              <WideTable minWidth={640}>
                <Table verticalSpacing="xs" striped data-testid="codes-table">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t("usage.code")}</Table.Th>
                      <Table.Th ta="right">{t("usage.amount")}</Table.Th>
                      <Table.Th>{t("admin.codes.batch")}</Table.Th>
                      <Table.Th>{t("admin.codes.created")}</Table.Th>
                      <Table.Th>{t("admin.codes.redeemedBy")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {rows.map((c) => (
                      <Table.Tr key={`${c.batch}-${c.prefix}`}>
                        <Table.Td>
                          <Text ff="monospace" size="sm">{c.prefix}…</Text>
                        </Table.Td>
                        <Table.Td ta="right">
                          <Text ff="monospace" size="sm">{usd(c.amount)}</Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="xs" ff="monospace" c="dimmed">{c.batch}</Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm">{dateTime(c.createdAt, locale)}</Text>
                        </Table.Td>
                        <Table.Td>
                          {c.redeemedBy === null
                            ? <Badge variant="light" color="gray">{t("admin.codes.unused")}</Badge>
                            : <Text size="sm">{c.redeemedBy} · {dateTime(c.redeemedAt ?? 0, locale)}</Text>}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </WideTable>
            )}
          {codes.hasNextPage && (
            <Group justify="center" p="sm">
              <Button variant="light" onClick={() => void codes.fetchNextPage()}>{t("common.loadMore")}</Button>
            </Group>
          )}
        </Paper>
      </Stack>
      <Modal
        opened={generated !== undefined}
        onClose={() => setGenerated(undefined)}
        title={
          <Text fw={700}>
            {generated && t("admin.codes.generated", { count: generated.codes.length, amount: usd(generated.amount) })}
          </Text>
        }
        centered
        size="lg"
        closeOnClickOutside={false}
      >
        {generated && (
          <Stack>
            <Alert color="yellow">{t("admin.codes.generatedHint")}</Alert>
            <div data-testid="generated-codes">
              <Snippet code={generated.codes.join("\n")} />
            </div>
            <Group justify="flex-end">
              <Button
                variant="default"
                component="a"
                href={`data:text/plain;charset=utf-8,${encodeURIComponent(generated.codes.join("\n") + "\n")}`}
                download={`${generated.batch}.txt`}
                leftSection={<IconDownload size={16} />}
              >
                {t("admin.codes.download")}
              </Button>
              <Button onClick={() => setGenerated(undefined)}>{t("keys.secretDone")}</Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </>
  )
}

/**
 * The models my keys can reach, per group, with prices after the group's
 * ratio and their limits.
 *
 * @since 0.1.0
 */
import { Badge, Card, Group, Paper, Stack, Table, Text, Title } from "@mantine/core"
import { IconStack2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import { PageHeader } from "../components/Bits.tsx"
import { EmptyState, QueryState } from "../components/States.tsx"
import { call, type Contract } from "../lib/api.ts"
import { price as formatPrice, tokens } from "../lib/format.ts"
import { type Translate, useI18n } from "../lib/i18n.tsx"

const price = (value: string | null) => value === null ? <Text c="dimmed" size="sm">—</Text> : <Text ff="monospace" size="sm">{formatPrice(value)}</Text>

/** A group's limits as words. @category helpers */
export const limitsText = (limits: Contract.Limits, t: Translate): string => {
  const parts = [
    limits.rpm === null ? undefined : t("models.rpm", { n: limits.rpm }),
    limits.tpm === null ? undefined : t("models.tpm", { n: limits.tpm }),
    limits.concurrency === null ? undefined : t("models.concurrency", { n: limits.concurrency })
  ].filter((p) => p !== undefined)
  return parts.length === 0 ? t("models.noLimits") : parts.join(" · ")
}

/** The models page. @category pages */
export function ModelsPage() {
  const { t } = useI18n()
  const query = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  return (
    <>
      <PageHeader title={t("models.title")} subtitle={t("models.subtitle")} />
      <QueryState query={query}>
        {(data) =>
          data.groups.every((g) => g.models.length === 0)
            ? <Paper withBorder radius="md"><EmptyState icon={<IconStack2 size={28} />} title={t("models.empty")} hint={t("models.emptyHint")} /></Paper>
            : (
              <Stack gap="lg" data-testid="models-page">
                {data.groups.map((group) => (
                  <Card key={group.name} withBorder radius="md" padding="md">
                    <Group justify="space-between" mb="sm" wrap="wrap">
                      <Group gap="xs">
                        <Title order={4}>{group.name}</Title>
                        <Badge variant="light" color={group.ratio === "1" ? "gray" : "indigo"}>{t("models.ratio", { ratio: group.ratio })}</Badge>
                      </Group>
                      <Text size="sm" c="dimmed">{t("models.limits")}: {limitsText(group.limits, t)}</Text>
                    </Group>
                    <Table.ScrollContainer minWidth={640}>
                      <Table striped verticalSpacing="xs">
                        <Table.Thead>
                          <Table.Tr>
                            <Table.Th>{t("usage.model")}</Table.Th>
                            <Table.Th ta="right">{t("models.input")}</Table.Th>
                            <Table.Th ta="right">{t("models.output")}</Table.Th>
                            <Table.Th ta="right">{t("models.cachedInput")}</Table.Th>
                            <Table.Th ta="right">{t("models.perRequest")}</Table.Th>
                            <Table.Th ta="right">{t("models.context")}</Table.Th>
                            <Table.Th ta="right">{t("models.maxOutput")}</Table.Th>
                          </Table.Tr>
                        </Table.Thead>
                        <Table.Tbody>
                          {group.models.map((model) => (
                            <Table.Tr key={model.id}>
                              <Table.Td>
                                <Text fw={600} size="sm" ff="monospace">{model.id}</Text>
                                {model.displayName !== model.id && <Text size="xs" c="dimmed">{model.displayName}</Text>}
                              </Table.Td>
                              {model.prices.free
                                ? <Table.Td colSpan={4} ta="right"><Badge color="teal">{t("common.free")}</Badge></Table.Td>
                                : (
                                  <>
                                    <Table.Td ta="right">{price(model.prices.input)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.output)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.cachedInput)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.perRequest)}</Table.Td>
                                  </>
                                )}
                              <Table.Td ta="right"><Text size="sm">{tokens(model.inputTokenLimit)}</Text></Table.Td>
                              <Table.Td ta="right"><Text size="sm">{tokens(model.outputTokenLimit)}</Text></Table.Td>
                            </Table.Tr>
                          ))}
                        </Table.Tbody>
                      </Table>
                    </Table.ScrollContainer>
                  </Card>
                ))}
              </Stack>
            )}
      </QueryState>
    </>
  )
}

/**
 * The models my keys can reach, per group, with prices after the group's
 * ratio and their limits.
 *
 * @since 0.1.0
 */
import { Alert, Badge, Card, Group, Paper, Stack, Table, Text, Title, Tooltip } from "@mantine/core"
import { IconStack2 } from "@tabler/icons-react"
import { useQuery } from "@tanstack/react-query"
import { PageHeader } from "../components/Bits.tsx"
import { EmptyState, QueryState } from "../components/States.tsx"
import { Usd } from "../components/Usd.tsx"
import { WideTable } from "../components/WideTable.tsx"
import { call, type Contract } from "../lib/api.ts"
import { compareUsd, price as formatPrice, tokens, usd } from "../lib/format.ts"
import { type Translate, useI18n } from "../lib/i18n.tsx"
import { useSession } from "../lib/session.tsx"

const price = (value: string | null) =>
  value === null ? <Text c="dimmed" size="sm">—</Text> : <Text ff="monospace" size="sm">{formatPrice(value)}</Text>

/** A group's limits as words. @category helpers */
export const limitsText = (limits: Contract.Limits, t: Translate): string => {
  const parts = [
    limits.rpm === null ? undefined : t("models.rpm", { n: limits.rpm }),
    limits.tpm === null ? undefined : t("models.tpm", { n: limits.tpm }),
    limits.concurrency === null ? undefined : t("models.concurrency", { n: limits.concurrency })
  ].filter((p) => p !== undefined)
  return parts.length === 0 ? t("models.noLimits") : parts.join(" · ")
}

/**
 * Says when the balance is below what a call to some of the user's models
 * holds when it does not set max_tokens (such calls are refused before they
 * run, with the amounts in the refusal's message): the models, and the
 * smallest such hold. Nothing when the balance covers them all. A balance
 * below zero (calls that cost more than they held) is said as such: every
 * call is refused until a top-up.
 *
 * @category components
 */
export function HoldWarning(
  { balance, groups }: { readonly balance: string; readonly groups: ReadonlyArray<Contract.GroupModels> }
) {
  const { t } = useI18n()
  if (compareUsd(balance, "0") < 0) {
    return (
      <Alert color="red" mb="md" data-testid="hold-warning">
        {t("models.belowZero", { balance: usd(balance) })}
      </Alert>
    )
  }
  const short = new Map<string, string>()
  for (const group of groups) {
    for (const model of group.models) {
      if (compareUsd(model.holdAtMaxOutput, balance) <= 0) continue
      const known = short.get(model.id)
      if (known === undefined || compareUsd(model.holdAtMaxOutput, known) < 0) {
        short.set(model.id, model.holdAtMaxOutput)
      }
    }
  }
  if (short.size === 0) return null
  const ids = [...short.keys()]
  const lowest = [...short.values()].reduce((a, b) => compareUsd(a, b) <= 0 ? a : b)
  return (
    <Alert color="yellow" mb="md" data-testid="hold-warning">
      {t("models.holdWarning", {
        balance: usd(balance),
        models: ids.length > 3 ? `${ids.slice(0, 3).join(", ")} …` : ids.join(", "),
        hold: usd(lowest)
      })}
    </Alert>
  )
}

/** The models page. @category pages */
export function ModelsPage() {
  const { t } = useI18n()
  const { session } = useSession()
  const query = useQuery({ queryKey: ["my-models"], queryFn: () => call((api) => api.account.models()) })
  return (
    <>
      <PageHeader title={t("models.title")} subtitle={t("models.subtitle")} />
      <QueryState query={query}>
        {(data) =>
          data.groups.every((g) => g.models.length === 0)
            ? (
              <Paper withBorder radius="md">
                <EmptyState icon={<IconStack2 size={28} />} title={t("models.empty")} hint={t("models.emptyHint")} />
              </Paper>
            )
            : (
              <Stack gap="lg" data-testid="models-page">
                {session !== undefined && <HoldWarning balance={session.user.balance} groups={data.groups} />}
                {data.groups.map((group) => (
                  <Card key={group.name} withBorder radius="md" padding="md">
                    <Group justify="space-between" mb="sm" wrap="wrap">
                      <Group gap="xs">
                        <Title order={4}>{group.name}</Title>
                        <Badge variant="light" color={group.ratio === "1" ? "gray" : "indigo"}>
                          {t("models.ratio", { ratio: group.ratio })}
                        </Badge>
                      </Group>
                      <Text size="sm" c="dimmed">{t("models.limits")}: {limitsText(group.limits, t)}</Text>
                    </Group>
                    <WideTable minWidth={760}>
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
                            <Table.Th ta="right">
                              <Tooltip label={t("models.holdHint")} multiline w={280} withArrow>
                                <span>{t("models.hold")}</span>
                              </Tooltip>
                            </Table.Th>
                          </Table.Tr>
                        </Table.Thead>
                        <Table.Tbody>
                          {group.models.map((model) => (
                            <Table.Tr key={model.id}>
                              <Table.Td>
                                <Text fw={600} size="sm" ff="monospace">{model.id}</Text>
                                {model.displayName !== model.id && <Text size="xs" c="dimmed">{model.displayName}
                                </Text>}
                              </Table.Td>
                              {model.prices.free
                                ? (
                                  <Table.Td colSpan={4} ta="right">
                                    <Badge color="teal">{t("common.free")}</Badge>
                                  </Table.Td>
                                )
                                : (
                                  <>
                                    <Table.Td ta="right">{price(model.prices.input)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.output)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.cachedInput)}</Table.Td>
                                    <Table.Td ta="right">{price(model.prices.perRequest)}</Table.Td>
                                  </>
                                )}
                              <Table.Td ta="right">
                                <Text size="sm">{tokens(model.inputTokenLimit)}</Text>
                              </Table.Td>
                              <Table.Td ta="right">
                                <Text size="sm">{tokens(model.outputTokenLimit)}</Text>
                              </Table.Td>
                              <Table.Td ta="right">
                                <Text size="sm" ff="monospace">
                                  <Usd amount={model.holdAtMaxOutput} />
                                </Text>
                              </Table.Td>
                            </Table.Tr>
                          ))}
                        </Table.Tbody>
                      </Table>
                    </WideTable>
                  </Card>
                ))}
              </Stack>
            )}
      </QueryState>
    </>
  )
}

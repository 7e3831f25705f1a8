/**
 * An amount of money as the console shows it (`usd`: cents from a dollar up,
 * at least four decimals below), with the exact amount, every digit, on hover.
 *
 * @since 0.1.0
 */
import { exactUsd, usd } from "../lib/format.ts"

/** An amount, exact on hover. @category components */
export function Usd({ amount, testId }: { readonly amount: string; readonly testId?: string }) {
  const shown = usd(amount)
  const exact = exactUsd(amount)
  return (
    <span
      title={exact === shown ? undefined : exact}
      data-exact={exact}
      data-testid={testId}
      style={{ fontVariantNumeric: "tabular-nums" }}
    >
      {shown}
    </span>
  )
}

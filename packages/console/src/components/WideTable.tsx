/**
 * A table wider than a phone: it scrolls sideways inside its own box (the
 * page never does), with the scrollbar always drawn and a "scroll sideways"
 * line above it while there is more to see, so the hidden columns are not a
 * secret. With `stickyLast`, the last column (the row's actions) stays in view
 * at any width, so every action is reachable without scrolling.
 *
 * @since 0.1.0
 */
import { ScrollArea, Text } from "@mantine/core"
import { IconArrowsHorizontal } from "@tabler/icons-react"
import { type ReactNode, useCallback, useEffect, useRef, useState } from "react"
import { useI18n } from "../lib/i18n.tsx"
import classes from "./WideTable.module.css"

/** A wide table. @category components */
export function WideTable({ minWidth, stickyLast = false, children }: {
  /** The table's natural width: below it, the box scrolls. */
  readonly minWidth: number
  /** Keep the last column (actions) in view. */
  readonly stickyLast?: boolean
  readonly children: ReactNode
}) {
  const { t } = useI18n()
  const viewport = useRef<HTMLDivElement>(null)
  const [more, setMore] = useState(false)
  const measure = useCallback(() => {
    const element = viewport.current
    if (element !== null) setMore(element.scrollWidth - element.clientWidth - element.scrollLeft > 1)
  }, [])
  useEffect(() => {
    measure()
    const element = viewport.current
    if (element === null || typeof ResizeObserver === "undefined") return
    const observer = new ResizeObserver(measure)
    observer.observe(element)
    return () => observer.disconnect()
  }, [measure])
  return (
    <div>
      {more && (
        <Text size="xs" c="dimmed" className={classes.hint} px="xs" pb={4} data-testid="scroll-hint">
          <IconArrowsHorizontal size={14} /> {t("common.scrollHint")}
        </Text>
      )}
      <ScrollArea
        type="always"
        scrollbars="x"
        offsetScrollbars="x"
        viewportRef={viewport}
        onScrollPositionChange={measure}
      >
        <div style={{ minWidth }} className={stickyLast ? classes.stickyLast : undefined}>{children}</div>
      </ScrollArea>
    </div>
  )
}

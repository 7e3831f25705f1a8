/**
 * Model names as clients send them: with or without Gemini's `models/` prefix,
 * or under an alias that an operator maps to a served model (gemini-cli sends
 * its own built-in ids, for example).
 *
 * @since 0.1.0
 */
import type { Alias } from "./Domain.ts"

/** Strips one leading `models/` (Gemini resource names). @category names */
export const normalizeModelName = (name: string): string => name.startsWith("models/") ? name.slice(7) : name

const escape = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, "\\$&")

/**
 * Compiles alias patterns into one resolver. Patterns are globs where `*`
 * matches any run of characters; the first matching alias wins, among those
 * whose target `accept` takes (all, without it).
 *
 * @category names
 */
export const compileAliases = (
  aliases: ReadonlyArray<Alias>
): (name: string, accept?: (target: string) => boolean) => string | undefined => {
  if (aliases.length === 0) return () => undefined
  const compiled = aliases.map((alias) => ({
    exact: alias.pattern.includes("*") ? undefined : alias.pattern,
    regex: new RegExp(`^${alias.pattern.split("*").map(escape).join(".*")}$`),
    target: alias.target
  }))
  return (name, accept) => {
    for (const alias of compiled) {
      const matches = alias.exact !== undefined ? alias.exact === name : alias.regex.test(name)
      if (matches && (accept === undefined || accept(alias.target))) return alias.target
    }
    return undefined
  }
}

/**
 * Model names as clients send them: with or without Gemini's `models/` prefix,
 * or under an alias that an operator maps to a served model (gemini-cli sends
 * its own built-in ids, for example).
 *
 * @since 0.1.0
 */
import type { Alias } from "./Domain.ts"

/** C0 and C1 control characters and DEL: never part of a model name. */
// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * The first control character of a model name (NUL, a line break, a tab,
 * DEL, ...) and where it is, or undefined when it has none. Such a name is
 * refused at the door: it would go into logs and CSV exports as it is.
 *
 * @category names
 */
export const controlCharacter = (name: string): { readonly code: string; readonly index: number } | undefined => {
  const match = CONTROL.exec(name)
  return match === null
    ? undefined
    : { code: `U+${match[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`, index: match.index }
}

/** A name with its control characters shown as `\u{...}` escapes, safe to quote in a message or a record. @category names */
export const printable = (name: string): string =>
  name.replace(new RegExp(CONTROL.source, "g"), (c) => `\\u{${c.charCodeAt(0).toString(16)}}`)

/**
 * The message refusing a model name with a control character (see `controlCharacter`).
 *
 * @category names
 */
export const controlCharacterMessage = (name: string, found: { readonly code: string; readonly index: number }) =>
  `The model name '${printable(name)}' contains a control character (${found.code} at position ${
    found.index + 1
  }). Model names are printable text: remove it.`

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

/**
 * `data:` URL helpers, written with `indexOf`/`slice` so multi-megabyte inline
 * images are scanned once and copied once.
 *
 * @since 0.1.0
 */

/** Splits `data:<mediaType>[;params];base64,<data>` into its parts; `undefined` for any other URL. */
export const parseBase64DataUrl = (url: string): { readonly mediaType: string; readonly data: string } | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const header = url.slice(5, comma)
  if (!header.endsWith(";base64")) return undefined
  const semicolon = header.indexOf(";")
  const mediaType = header.slice(0, semicolon)
  if (mediaType.length === 0) return undefined
  return { mediaType, data: url.slice(comma + 1) }
}

/** Builds `data:<mediaType>;base64,<data>`. */
export const base64DataUrl = (mediaType: string, data: string): string => `data:${mediaType};base64,${data}`

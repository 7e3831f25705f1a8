/**
 * Text helpers for messages that quote what a client sent.
 *
 * @since 0.1.0
 */

/**
 * A value as it may be quoted in an error message: whole when short, else its
 * first `max` characters and how many were left out, so a 200 KB field is
 * never sent back (or logged) in full.
 *
 * @category messages
 */
export const clip = (value: string, max = 80): string =>
  value.length <= max ? value : `${value.slice(0, max)}… (${value.length - max} more characters)`

/**
 * A whole message capped at `max` characters (the last safety net for
 * messages built from several quoted values).
 *
 * @category messages
 */
export const capMessage = (message: string, max = 1_000): string =>
  message.length <= max ? message : `${message.slice(0, max)}… (message cut at ${max} characters)`

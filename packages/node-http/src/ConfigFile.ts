/**
 * The configuration file: YAML, decoded with the engine's schema
 * (`@modelgate/engine/Config`, which this module re-exports). A file that does
 * not decode stops the start with a message that names the file, the path of
 * each bad field and what was expected.
 *
 * @since 0.1.0
 */
import { ConfigError, type ConfigFile, parse } from "@modelgate/engine/config/Config"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { dirname, resolve } from "node:path"

export * from "@modelgate/engine/config/Config"

/**
 * Reads and decodes a configuration file. A Vertex AI channel's
 * `credentials_file` (relative to the configuration file's directory) is
 * read here and becomes its `credentials`.
 *
 * @category decoding
 */
export const load = (path: string): Effect.Effect<ConfigFile, ConfigError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (cause) =>
      new ConfigError({
        message: `Cannot read the configuration file ${path}: ${
          (cause as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : String(cause)
        }`
      })
  }).pipe(
    Effect.flatMap((text) => parse(text, path)),
    Effect.flatMap((file) => readCredentialFiles(file, path))
  )

/**
 * The file with every channel's `credentials_file` read into its
 * `credentials` (a channel that gives both is refused: one key file is its).
 *
 * @category decoding
 */
export const readCredentialFiles = (file: ConfigFile, path: string): Effect.Effect<ConfigFile, ConfigError> => {
  const channels = file.channels
  if (channels === undefined || channels.every((channel) => channel.credentials_file === undefined)) {
    return Effect.succeed(file)
  }
  return Effect.map(
    Effect.forEach(channels, (channel, i) => {
      const named = channel.credentials_file
      if (named === undefined) return Effect.succeed(channel)
      const at = `channels[${i}].credentials_file`
      if (channel.credentials !== undefined) {
        return Effect.fail(
          new ConfigError({
            message: `Invalid configuration in ${path}:\n  at ${at}: give credentials or credentials_file, not both`
          })
        )
      }
      const where = resolve(dirname(path), named)
      return Effect.tryPromise({
        try: () => readFile(where, "utf8"),
        catch: (cause) =>
          new ConfigError({
            message:
              `Invalid configuration in ${path}:\n  at ${at}: cannot read the service-account key file ${where}: ${
                (cause as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : String(cause)
              }`
          })
      }).pipe(Effect.map((text) => {
        const { credentials_file: _, ...rest } = channel
        return { ...rest, credentials: text }
      }))
    }),
    (resolved) => ({ ...file, channels: resolved })
  )
}

/**
 * The configuration file: YAML, decoded with the engine's schema
 * (`@modelgate/engine/Config`, which this module re-exports). A file that does
 * not decode stops the start with a message that names the file, the path of
 * each bad field and what was expected.
 *
 * @since 0.1.0
 */
import { ConfigError, type ConfigFile, parse } from "@modelgate/engine/Config"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"

export * from "@modelgate/engine/Config"

/**
 * Reads and decodes a configuration file.
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
  }).pipe(Effect.flatMap((text) => parse(text, path)))

/**
 * `@modelgate/node-http`: modelgate on Node. The server (`Server.layer`: the
 * database, provisioning from the configuration file, the caches, the
 * engine's services and the listener, as one layer), the HTTP application
 * (`Gateway.app`), the engine's transport over Undici (`UndiciTransport`) and
 * its stream relay as a Node `Readable` (`NodeRelay`), the configuration file
 * (`ConfigFile`, `Settings`) and the `modelgate` command line (`Cli`; the
 * executable is `src/bin.ts`).
 *
 * @since 0.1.0
 */
export * as Cli from "./Cli.ts"
export * as ConfigFile from "./ConfigFile.ts"
export * as Gateway from "./Gateway.ts"
export * as NodeRelay from "./NodeRelay.ts"
export * as Provision from "./Provision.ts"
export * as Server from "./Server.ts"
export * as Settings from "./Settings.ts"
export * as UndiciTransport from "./UndiciTransport.ts"

/**
 * `@modelgate/admin-api`: the management API under `/api/`. `Api` (the
 * contract), `Contract` (its Schemas) and `ApiError` are browser-safe (the
 * console derives its client from them); `AdminApi` is the server side that
 * node-http mounts.
 *
 * @since 0.1.0
 */
export * as AdminApi from "./AdminApi.ts"
export * as Api from "./Api.ts"
export * as ApiError from "./ApiError.ts"
export * as Config from "./Config.ts"
export * as Contract from "./Contract.ts"
export * as Csv from "./Csv.ts"
export * as LoginLimiter from "./LoginLimiter.ts"
export * as PlaygroundEngine from "./PlaygroundEngine.ts"
export * as PriceTable from "./PriceTable.ts"
export * as TrustedProxies from "./TrustedProxies.ts"
export * as Views from "./Views.ts"

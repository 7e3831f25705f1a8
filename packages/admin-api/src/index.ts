/**
 * `@modelgate/admin-api`: the management API under `/api/`. `Contract` and
 * `Endpoints` are browser-safe (the console imports them); `Handlers` is the
 * server side that node-http mounts.
 *
 * @since 0.1.0
 */
export * as Contract from "./Contract.ts"
export * as Endpoints from "./Endpoints.ts"
export * as ApiError from "./ApiError.ts"
export * as CatalogAdmin from "./CatalogAdmin.ts"
export * as Handlers from "./Handlers.ts"
export * as LoginLimiter from "./LoginLimiter.ts"
export * as Queries from "./Queries.ts"
export * as Sessions from "./Sessions.ts"

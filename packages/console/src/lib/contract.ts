/**
 * The shared request/response Schemas, re-exported for the console (only the
 * browser-safe modules of `@modelgate/admin-api`).
 *
 * @since 0.1.0
 */
export * as Contract from "@modelgate/admin-api/Contract"

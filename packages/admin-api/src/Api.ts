/**
 * The management API as one `HttpApi` contract: every endpoint under `/api/`
 * with its method, path, query, body, answer and errors, grouped by what it
 * manages, and the middleware that guards it. The server implements it
 * (`AdminApi.ts`), the console calls it through a client derived from it
 * (`HttpApiClient`), and `GET /api/openapi.json` serves it as OpenAPI.
 *
 * Who may call what, enforced by the middleware named on each endpoint:
 *
 * - `Authentication`: a console session (the `mg_session` cookie) or an API
 *   key (`Authorization: Bearer`); it provides the `Principal`.
 * - `Csrf`: a state-changing request made with a session carries the
 *   session's CSRF token in `x-csrf-token`.
 * - `SessionOnly`: the endpoint changes what the caller's keys may do (or
 *   spends their account), so an API key may not call it: a leaked key
 *   can never create keys or loosen its limits. Keys read.
 * - `AdminOnly`: administrators only (a session, or an admin's key).
 * - `Requests` (every endpoint): a body is JSON, and a request the contract
 *   cannot decode is a 400 naming the field.
 *
 * Browser-safe: depends on `effect` (and types of core) only.
 *
 * @since 0.1.0
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { Requests } from "./Guards.ts"
import { AccountGroup } from "./handlers/AccountContract.ts"
import { CatalogGroup } from "./handlers/CatalogContract.ts"
import { CodesGroup } from "./handlers/CodesContract.ts"
import { KeysGroup } from "./handlers/KeysContract.ts"
import { PlaygroundGroup } from "./handlers/PlaygroundContract.ts"
import { SessionGroup } from "./handlers/SessionContract.ts"
import { SsoGroup } from "./handlers/SsoContract.ts"
import { UsageGroup } from "./handlers/UsageContract.ts"
import { UsersGroup } from "./handlers/UsersContract.ts"

export {
  AdminOnly,
  Authentication,
  COOKIE,
  Csrf,
  CSRF_HEADER,
  Principal,
  type PrincipalShape,
  Requests,
  SessionOnly
} from "./Guards.ts"
export { AccountGroup } from "./handlers/AccountContract.ts"
export { CatalogGroup } from "./handlers/CatalogContract.ts"
export { CodesGroup } from "./handlers/CodesContract.ts"
export { KeysGroup } from "./handlers/KeysContract.ts"
export { PlaygroundGroup } from "./handlers/PlaygroundContract.ts"
export { SessionGroup } from "./handlers/SessionContract.ts"
export { SsoGroup } from "./handlers/SsoContract.ts"
export { UsageGroup } from "./handlers/UsageContract.ts"
export { UsersGroup } from "./handlers/UsersContract.ts"

/**
 * The management API.
 *
 * @category api
 */
export class Api extends HttpApi.make("modelgate")
  .add(SessionGroup, AccountGroup, KeysGroup, UsageGroup, UsersGroup, CatalogGroup, CodesGroup)
  .add(SsoGroup, PlaygroundGroup)
  .middleware(Requests)
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.HeadersParseOptions, {})
  .annotateMerge(OpenApi.annotations({
    title: "modelgate management API",
    version: "1",
    description: "Sessions, API keys, usage, billing and administration of a modelgate gateway. " +
      "Errors are {\"error\":{\"message\",\"type\",\"param\",\"code\"}} with the HTTP status; see docs/api.md."
  }))
{}

/** Where the OpenAPI document is served. @category constants */
export const OPENAPI_PATH = "/api/openapi.json"

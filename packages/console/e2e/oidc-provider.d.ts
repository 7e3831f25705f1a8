// The little of oidc-provider's API the single sign-on browser test uses (the package ships no types).
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http"

  interface KoaContext {
    readonly path: string
    readonly method: string
    body: unknown
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void
    callback(): (req: IncomingMessage, res: ServerResponse) => void
  }
}

/**
 * The management API's request and response Schemas, for every endpoint under
 * `/api/`, in one place. Each API group's Schemas stand with its endpoints in
 * `handlers/<Group>Contract.ts`, beside the group's handlers (`Api.ts`
 * composes the groups). The server decodes requests and encodes responses
 * with these Schemas; the console decodes responses and validates its forms
 * with the very same ones, so no shape is written twice.
 *
 * Browser-safe: depends on `effect` (and core's `Domain`) only, no Node built-ins.
 *
 * Wire conventions:
 *
 * - field names are camelCase;
 * - money is an exact decimal USD string (`"12.50"`, `"0.000125"`), never a float;
 * - times are epoch milliseconds (numbers); days are `YYYY-MM-DD` (UTC);
 * - lists are `{ data, nextCursor }`, paged with `?limit=&cursor=`;
 * - errors are `{"error":{"message","type","param","code"}}` (the OpenAI envelope),
 *   with `param` naming the offending field (`models[2]`, `amount`).
 *
 * @since 0.1.0
 */
export {
  ConnectInfo,
  Dashboard,
  GatewayMe,
  GroupModels,
  Limits,
  ModelInfo,
  MyModels,
  Prices,
  RedeemRequest,
  RedeemResult
} from "./handlers/AccountContract.ts"
export {
  AdminChannel,
  AdminGroup,
  AdminModel,
  Alias,
  AliasList,
  AliasQuery,
  BreakerSettings,
  ChannelHealth,
  ChannelList,
  ChannelParams,
  ChannelTimeouts,
  CreateChannelRequest,
  CreateGroupRequest,
  FetchedModels,
  FetchModelsRequest,
  GroupList,
  KeyHealth,
  KeyState,
  KeyTestResult,
  MediaHoldTokens,
  MediaPartTokens,
  modelDefaults,
  ModelList,
  PricePreset,
  PricePresets,
  RefusedModel,
  SetAliasRequest,
  TestChannelRequest,
  TestChannelResult,
  UnpricedModel,
  UpdateChannelRequest,
  UpdateGroupRequest,
  UpsertModelRequest,
  UpstreamModel
} from "./handlers/CatalogContract.ts"
export { AdminCode, CodePage, CodesQuery, GenerateCodesRequest, GeneratedCodes } from "./handlers/CodesContract.ts"
export {
  ApiKey,
  CreatedKey,
  CreateKeyRequest,
  keyLimitFields,
  KeyList,
  UpdateKeyRequest
} from "./handlers/KeysContract.ts"
export { PlaygroundChatRequest, PlaygroundMessage } from "./handlers/PlaygroundContract.ts"
export { ChangePasswordRequest, LoginRequest, Me, SessionInfo } from "./handlers/SessionContract.ts"
export {
  ChannelType,
  Day,
  EpochMs,
  ErrorBody,
  LimitValue,
  List,
  ModelNameText,
  Name,
  NewPassword,
  NonNegativeUsd,
  Ok,
  Page,
  PageQuery,
  PositiveUsd,
  Ratio,
  Role,
  Usd,
  UserName
} from "./handlers/SharedContract.ts"
export { AuthMethods } from "./handlers/SsoContract.ts"
export {
  AdminOverview,
  AdminUsageQuery,
  DailyPoint,
  DailyUsage,
  Dialect,
  LedgerItem,
  LedgerKind,
  LedgerPage,
  StatusClass,
  UsageAttempt,
  UsageItem,
  UsagePage,
  UsageQuery,
  UserSpend
} from "./handlers/UsageContract.ts"
export {
  AdjustBalanceRequest,
  AdminUser,
  BalanceResult,
  CreateUserRequest,
  UpdateUserRequest,
  userLimitFields,
  UserList
} from "./handlers/UsersContract.ts"

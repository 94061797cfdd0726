// @oprc/odgm — the ODGM service as a library: start a node in-process (tests, embedding).

export type { Access, AccessRule, Scope } from "./auth/authorization-table.js";
export { REST_ACCESS, RPC_ACCESS } from "./auth/authorization-table.js";
export type { Authorizer, AuthorizerOptions, AuthResult, AuthSurface } from "./auth/authorizer.js";
export { createAuthorizer, TRUSTED_HEADER } from "./auth/authorizer.js";
export type { Principal, Role, TokenEntry, TokenSet } from "./auth/token-set.js";
export { createTokenSet, digestToken, parseTokenEntries } from "./auth/token-set.js";
export type { Env, OdgmConfig } from "./config.js";
export { loadConfig } from "./config.js";
export type { OdgmNode, StartOdgmOptions } from "./odgm.js";
export { DEFAULT_COLLECTION, startOdgm } from "./odgm.js";
export type { OdgmErrorCode, OdgmErrorOptions } from "./odgm-error.js";
export { isOdgmError, OdgmError } from "./odgm-error.js";

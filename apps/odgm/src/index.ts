// @oprc/odgm — the ODGM service as a library: start a node in-process (tests, embedding).
export type { Env, OdgmConfig } from "./config.js";
export { loadConfig } from "./config.js";
export type { OdgmNode, StartOdgmOptions } from "./odgm.js";
export { DEFAULT_COLLECTION, startOdgm } from "./odgm.js";
export type { OdgmErrorCode, OdgmErrorOptions } from "./odgm-error.js";
export { isOdgmError, OdgmError } from "./odgm-error.js";

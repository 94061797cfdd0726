export { isCanonicalU32, isCanonicalU64, parseCanonicalU64 } from "./canonical-decimal.js";
export type { EntryKey, EntryKeyInput } from "./entry-key.js";
export { canonicalEntryKey } from "./entry-key.js";
export { hashId, partitionOf } from "./hash-id.js";
export type { IdErrorCode, IdErrorOptions } from "./id-error.js";
export { IdError, isIdError } from "./id-error.js";
export type { NormalizeOptions } from "./normalize-id.js";
export { DEFAULT_MAX_ID_LENGTH, normalizeEntryKey, normalizeObjectId } from "./normalize-id.js";
export type { IdentityInput, ObjectIdentity } from "./object-identity.js";
export { buildIdentity, parsePathSegment } from "./object-identity.js";
export type { RecordKeyType } from "./record-key.js";
export { isValidRecordKey, RECORD_KEY_MAX_LENGTH, validateRecordKey } from "./record-key.js";
export type { TidClock, TidClockOptions, TidParts } from "./tid.js";
export {
  compareTids,
  createTidClock,
  formatTid,
  isValidTid,
  parseTid,
  TID_ALPHABET,
  TID_LENGTH,
} from "./tid.js";

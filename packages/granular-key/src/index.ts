// @oprc/granular-key — the byte layout of ODGM storage keys (spec §3).

export {
  decodeCursor,
  decodeListCursor,
  encodeCursor,
  encodeListCursor,
} from "./cursor.js";
export type { DecodedKey, ExtensionRecord, RecordKind } from "./decode-key.js";
export { decodeKey } from "./decode-key.js";
export type { KeyErrorCode } from "./key-error.js";
export { isKeyError, KeyError } from "./key-error.js";
export type { EntryRangeOptions, KeyRange, ObjectsRangeOptions } from "./key-range.js";
export {
  afterObject,
  compareKeys,
  DEFAULT_MAX_KEY_LENGTH,
  entryRange,
  findRange,
  keyInRange,
  objectPrefix,
  objectRange,
  objectsRange,
  rangesAfter,
} from "./key-range.js";
export { decodeLegacyKey, encodeLegacyKey } from "./legacy-key.js";
export type { EntryKeyRef } from "./object-key.js";
export {
  encodeEntryKey,
  encodeEventConfigKey,
  encodeMetadataKey,
  MAX_NUMERIC_ENTRY_KEY,
} from "./object-key.js";
export { RecordType } from "./record-type.js";
export type { DecodedVarint } from "./varint.js";
export { decodeVarint, encodeVarint, MAX_VARINT_BYTES, varintLength } from "./varint.js";

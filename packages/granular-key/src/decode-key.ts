import { KeyError } from "./key-error.js";
import { RecordType } from "./record-type.js";
import { readStr } from "./utf8.js";
import { readVarint, varintEnd } from "./varint.js";

/** The record kinds {@link decodeKey} reports. */
export type RecordKind =
  | "metadata"
  | "event_config"
  | "view_blob"
  | "numeric_entry"
  | "string_entry"
  | "extension";

/** An extension record (record type with bit 0x80 set), not interpreted further. */
export interface ExtensionRecord {
  /** The record-type byte, `0x80`–`0xff`. */
  readonly recordType: number;
  /** The varint extension header that follows the record type. */
  readonly header: number;
  /** The bytes after the header (a copy), whose meaning the header defines. */
  readonly payload: Uint8Array;
}

/**
 * A decoded storage key: the object id, the record kind and, for entries, the entry key
 * (`key`), for extensions the extension (`extension`).
 */
export type DecodedKey =
  | { readonly id: string; readonly record: "metadata" | "event_config" | "view_blob" }
  | { readonly id: string; readonly record: "numeric_entry"; readonly key: { numeric: number } }
  | { readonly id: string; readonly record: "string_entry"; readonly key: { str: string } }
  | { readonly id: string; readonly record: "extension"; readonly extension: ExtensionRecord };

/**
 * Decodes any storage key produced by this package, validating it completely.
 *
 * Total: for every input it returns a {@link DecodedKey} or throws a {@link KeyError}
 * (`truncated`, `empty_id`, `invalid_utf8`, `unknown_record`, `bad_varint`,
 * `trailing_bytes`, `invalid_argument` for a non-`Uint8Array`) — never anything else.
 * Keys starting with `0x00` (system records) are `empty_id`.
 *
 * @example
 * ```ts
 * const key = decodeKey(encodeEntryKey("user-123", { str: "name" }));
 * // { id: "user-123", record: "string_entry", key: { str: "name" } }
 * ```
 */
export function decodeKey(bytes: Uint8Array): DecodedKey {
  if (!(bytes instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "key must be a Uint8Array");
  }
  const nul = bytes.indexOf(0);
  if (nul === -1) throw new KeyError("truncated", "key has no 0x00 id terminator");
  if (nul === 0) {
    throw new KeyError("empty_id", "key starts with 0x00 (empty id; system key space)");
  }
  const id = readStr(bytes, 0, nul, "object id");
  const end = bytes.length;
  let pos = nul + 1;
  if (pos >= end) throw new KeyError("truncated", "key ends before its record type");
  const type = bytes[pos++] as number;
  switch (type) {
    case RecordType.Metadata:
      expectEnd(end, pos, "metadata");
      return { id, record: "metadata" };
    case RecordType.EventConfig:
      expectEnd(end, pos, "event config");
      return { id, record: "event_config" };
    case RecordType.ViewBlob:
      expectEnd(end, pos, "view blob");
      return { id, record: "view_blob" };
    case RecordType.NumericEntry: {
      if (end - pos < 4) throw new KeyError("truncated", "numeric entry key shorter than 4 bytes");
      const numeric =
        (((bytes[pos] as number) << 24) |
          ((bytes[pos + 1] as number) << 16) |
          ((bytes[pos + 2] as number) << 8) |
          (bytes[pos + 3] as number)) >>>
        0;
      expectEnd(end, pos + 4, "numeric entry");
      return { id, record: "numeric_entry", key: { numeric } };
    }
    case RecordType.StringEntry: {
      const length = readVarint(bytes, pos, "string entry key length");
      const start = varintEnd;
      if (end - start < length) {
        throw new KeyError(
          "truncated",
          `string entry key declares ${length} bytes, ${end - start} remain`,
        );
      }
      const str = readStr(bytes, start, start + length, "string entry key");
      expectEnd(end, start + length, "string entry");
      return { id, record: "string_entry", key: { str } };
    }
    default: {
      if ((type & RecordType.ExtensionBit) === 0) {
        throw new KeyError(
          "unknown_record",
          `record type 0x${type.toString(16).padStart(2, "0")} is not allocated`,
        );
      }
      const header = readVarint(bytes, pos, "extension header");
      return {
        id,
        record: "extension",
        extension: { recordType: type, header, payload: bytes.slice(varintEnd) },
      };
    }
  }
}

function expectEnd(end: number, pos: number, what: string): void {
  if (pos !== end) {
    throw new KeyError("trailing_bytes", `${end - pos} trailing byte(s) after the ${what} key`);
  }
}

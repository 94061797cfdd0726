import {
  canonicalEntryKey,
  type EntryKey,
  type NormalizeOptions,
  type ObjectIdentity,
  parsePathSegment,
} from "@oprc/oprc-id";
import { GatewayError } from "./gateway-error.js";

const U32_MAX = 0xffff_ffff;
const I32_MAX = 0x7fff_ffff;

/**
 * The still percent-encoded path of a request URL, split at `/` (the first element is the
 * empty string before the leading slash). The gateway decodes each segment itself, so a
 * decoded `/` (`%2F`) stays inside its segment and malformed escapes are detected.
 */
export function rawPathSegments(url: string): string[] {
  const start = url.indexOf("/", url.indexOf(":") + 3);
  let end = url.length;
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 || c === 35) {
      end = i;
      break;
    }
  }
  return url.slice(start, end).split("/");
}

/**
 * Percent-decodes one path segment strictly.
 *
 * @throws {GatewayError} `bad_request` for a malformed escape or an escape that is not UTF-8.
 */
export function decodeSegment(raw: string, what: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch (cause) {
    throw new GatewayError(
      "bad_request",
      `${what} segment "${raw}" has malformed percent-encoding`,
      { cause },
    );
  }
}

/**
 * Reads an object id segment (spec §2): digits that fit u64 are numeric (`"042"` → 42),
 * anything else is a string id, normalized with `ids`. `.` and `..` are refused, because
 * URL normalization would make them address a different path.
 *
 * @throws {GatewayError} `bad_request` carrying the normalization error's message.
 */
export function parseObjectSegment(raw: string, ids: NormalizeOptions): ObjectIdentity {
  const segment = decodeSegment(raw, "object id");
  if (segment === "." || segment === "..") {
    throw new GatewayError(
      "bad_request",
      `object id "${segment}" cannot be addressed in a URL path`,
    );
  }
  try {
    return parsePathSegment(segment, ids);
  } catch (err) {
    throw GatewayError.from(err);
  }
}

/**
 * Reads an entry key segment: digits whose value fits u32 are the numeric key (`"007"` → 7,
 * the path rule of spec §2), anything else is a string key normalized with `ids` (so a key
 * of digits above 2^32-1 is a string key).
 *
 * @throws {GatewayError} `bad_request` carrying the normalization error's message.
 */
export function parseKeySegment(raw: string, ids: NormalizeOptions): EntryKey {
  const segment = decodeSegment(raw, "entry key");
  if (segment === "." || segment === "..") {
    throw new GatewayError(
      "bad_request",
      `entry key "${segment}" cannot be addressed in a URL path`,
    );
  }
  if (/^[0-9]{1,20}$/.test(segment)) {
    const n = Number(segment);
    if (n <= U32_MAX) return { kind: "numeric", key: String(n), numeric: n };
  }
  try {
    return canonicalEntryKey({ keyStr: segment }, ids);
  } catch (err) {
    throw GatewayError.from(err);
  }
}

/**
 * Reads the partition segment: decimal digits in 0..2^31-1 (the range every request message
 * can carry; `SetKeyRequest` and `SetObjectRequest` use int32).
 *
 * @throws {GatewayError} `bad_request`.
 */
export function parsePartitionSegment(raw: string): number {
  const segment = decodeSegment(raw, "partition");
  if (!/^[0-9]{1,10}$/.test(segment) || Number(segment) > I32_MAX) {
    throw new GatewayError(
      "bad_request",
      `partition "${segment}" must be an integer in 0..${I32_MAX}`,
    );
  }
  return Number(segment);
}

/**
 * Reads a class (or function) id segment: any non-empty text without control characters;
 * the data service validates it further.
 *
 * @throws {GatewayError} `bad_request`.
 */
export function parseNameSegment(raw: string, what: string): string {
  const segment = decodeSegment(raw, what);
  if (segment === "") throw new GatewayError("bad_request", `${what} is empty`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  const bad = /[\u0000-\u001f\u007f-\u009f/]/.exec(segment);
  if (bad !== null) {
    const cp = (bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    throw new GatewayError(
      "bad_request",
      `${what} has invalid character U+${cp} at index ${bad.index}`,
    );
  }
  return segment;
}

/** The wire form of an object id: `object_id` for non-zero numeric ids, else `object_id_str`. */
export function objectRef(id: ObjectIdentity): { objectId: bigint; objectIdStr?: string } {
  // Numeric 0 is "absent" on the wire; its string form "0" is the same object (spec §2).
  if (id.kind === "numeric" && id.numeric !== 0n) return { objectId: id.numeric };
  return { objectId: 0n, objectIdStr: id.id };
}

/** The wire form of an entry key: `key` for numeric keys, `key_str` for string keys. */
export function keyRef(key: EntryKey): { key: number; keyStr?: string } {
  if (key.kind === "numeric") return { key: key.numeric };
  return { key: 0, keyStr: key.key };
}

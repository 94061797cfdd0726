import { IdError } from "./id-error.js";
import { type NormalizeOptions, normalizeObjectId } from "./normalize-id.js";

/**
 * An object's identity. `id` is always the normalized storage string (numeric 42 → `"42"`);
 * compare identities by `id`, since numeric N and string `"N"` are the same object. `kind`
 * records which wire form the caller used, so responses and events can echo it.
 */
export type ObjectIdentity =
  | { kind: "numeric"; id: string; numeric: bigint }
  | { kind: "string"; id: string };

/** Input of {@link buildIdentity}: the two wire fields `object_id` and `object_id_str`. */
export interface IdentityInput {
  /** `object_id` (u64). `0`/`0n` means absent, because proto3 cannot tell them apart. */
  numeric?: bigint | number;
  /** `object_id_str`. `""` means absent (the proto3 default). Normalized when present. */
  str?: string;
}

const U64_MAX = 0xffff_ffff_ffff_ffffn;
const U64_MAX_STR = "18446744073709551615";

/**
 * Builds an {@link ObjectIdentity} from the wire fields: exactly one of `numeric` (non-zero)
 * and `str` (non-empty) must be given. A string is normalized with `options`.
 *
 * @throws {IdError} `both_provided`, `none_provided`, `out_of_range` (numeric negative, not an
 *   integer, above 2^64-1, or a `number` above `Number.MAX_SAFE_INTEGER` — pass a `bigint`),
 *   or a normalization error.
 *
 * @example
 * ```ts
 * buildIdentity({ str: "User-123" }); // { kind: "string", id: "user-123" }
 * buildIdentity({ numeric: 42 }); // { kind: "numeric", id: "42", numeric: 42n }
 * ```
 */
export function buildIdentity(input: IdentityInput, options?: NormalizeOptions): ObjectIdentity {
  const { numeric, str } = input;
  let value = 0n;
  if (numeric !== undefined) value = toU64(numeric);
  const hasStr = str !== undefined && str !== "";
  if (value !== 0n) {
    if (hasStr) {
      throw new IdError("both_provided", "give either a numeric or a string object id, not both");
    }
    return { kind: "numeric", id: value.toString(), numeric: value };
  }
  if (hasStr) return { kind: "string", id: normalizeObjectId(str, options) };
  throw new IdError("none_provided", "an object id is required (numeric 0 counts as absent)");
}

function toU64(n: bigint | number): bigint {
  if (typeof n === "bigint") {
    if (n < 0n || n > U64_MAX) throw outOfRange(n);
    return n;
  }
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) throw outOfRange(n);
  return BigInt(n);
}

function outOfRange(n: unknown): IdError {
  return new IdError(
    "out_of_range",
    `numeric object id must be an integer in 0..2^64-1 (a bigint above 2^53-1), got ${String(n)}`,
  );
}

/**
 * Reads an object id from a path segment (REST, Zenoh) that the caller has already
 * percent-decoded: a segment of ASCII digits whose value fits u64 is numeric (`"042"` → 42,
 * id `"42"`, `"0"` → 0); anything else is a string id and is normalized with `options`.
 *
 * @throws {IdError} a normalization error for a string segment.
 *
 * @example
 * ```ts
 * parsePathSegment("042"); // { kind: "numeric", id: "42", numeric: 42n }
 * parsePathSegment("Order-7"); // { kind: "string", id: "order-7" }
 * ```
 */
export function parsePathSegment(segment: string, options?: NormalizeOptions): ObjectIdentity {
  const n = segment.length;
  let start = 0;
  let digits = n > 0;
  for (let i = 0; i < n; i++) {
    const c = segment.charCodeAt(i);
    if (c < 48 || c > 57) {
      digits = false;
      break;
    }
    if (c === 48 && start === i) start = i + 1;
  }
  if (digits) {
    const len = n - start;
    if (len === 0) return { kind: "numeric", id: "0", numeric: 0n };
    const canonical = start === 0 ? segment : segment.slice(start);
    if (len < 20 || (len === 20 && canonical <= U64_MAX_STR)) {
      return { kind: "numeric", id: canonical, numeric: BigInt(canonical) };
    }
  }
  return { kind: "string", id: normalizeObjectId(segment, options) };
}

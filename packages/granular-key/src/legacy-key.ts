import { alloc } from "./byte-pool.js";
import { KeyError } from "./key-error.js";

const MAX_U64 = 0xffff_ffff_ffff_ffffn;

/**
 * The key of a legacy (pre-granular) blob: the numeric object id as 8 bytes, big-endian.
 * Legacy blobs live in their own keyspace (`blob` column family or sub-database), never
 * mixed with granular keys (spec §3).
 *
 * @param id - 0 … 2^64 - 1; anything else (or a non-bigint) is `out_of_range`.
 * @example
 * ```ts
 * encodeLegacyKey(42n); // 00 00 00 00 00 00 00 2a
 * ```
 */
export function encodeLegacyKey(id: bigint): Uint8Array {
  if (typeof id !== "bigint" || id < 0n || id > MAX_U64) {
    throw new KeyError("out_of_range", `legacy id must be a u64 bigint, got ${String(id)}`);
  }
  const out = alloc(8);
  const hi = Number(id >> 32n);
  const lo = Number(id & 0xffff_ffffn);
  out[0] = hi >>> 24;
  out[1] = (hi >>> 16) & 0xff;
  out[2] = (hi >>> 8) & 0xff;
  out[3] = hi & 0xff;
  out[4] = lo >>> 24;
  out[5] = (lo >>> 16) & 0xff;
  out[6] = (lo >>> 8) & 0xff;
  out[7] = lo & 0xff;
  return out;
}

/**
 * Decodes a legacy blob key. Exactly 8 bytes: fewer is `truncated`, more is
 * `trailing_bytes`.
 */
export function decodeLegacyKey(bytes: Uint8Array): bigint {
  if (!(bytes instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "legacy key must be a Uint8Array");
  }
  if (bytes.length < 8) throw new KeyError("truncated", `legacy key has ${bytes.length} bytes`);
  if (bytes.length > 8) {
    throw new KeyError("trailing_bytes", `legacy key has ${bytes.length} bytes, expected 8`);
  }
  const hi =
    (((bytes[0] as number) << 24) |
      ((bytes[1] as number) << 16) |
      ((bytes[2] as number) << 8) |
      (bytes[3] as number)) >>>
    0;
  const lo =
    (((bytes[4] as number) << 24) |
      ((bytes[5] as number) << 16) |
      ((bytes[6] as number) << 8) |
      (bytes[7] as number)) >>>
    0;
  return (BigInt(hi) << 32n) | BigInt(lo);
}

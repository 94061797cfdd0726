/** Lexicographic comparison of two byte strings (memcmp order, shorter first on a tie). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** Concatenates byte strings into a fresh array (a list, not arguments: it may be long). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** True when `bytes` starts with `prefix`. */
export function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

/** Lowercase hex of `bytes`, for error messages. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

const TWO_32 = 0x1_0000_0000;
const SAFE_END = 2n ** 53n;

/**
 * Writes `value` (a u64) as eight big-endian bytes at `at`. Below 2^53 (every revision and
 * log index in practice) from a number's two 32-bit halves: a DataView's `setBigUint64`
 * costs several times more, and change-log keys take one per mutation on every replica.
 */
export function writeU64(out: Uint8Array, at: number, value: bigint | number): void {
  let hi: number;
  let lo: number;
  if (typeof value === "number" || value < SAFE_END) {
    const n = Number(value);
    hi = Math.floor(n / TWO_32);
    lo = n - hi * TWO_32;
  } else {
    hi = Number(value >> 32n);
    lo = Number(value & 0xffff_ffffn);
  }
  out[at] = hi >>> 24;
  out[at + 1] = (hi >>> 16) & 0xff;
  out[at + 2] = (hi >>> 8) & 0xff;
  out[at + 3] = hi & 0xff;
  out[at + 4] = lo >>> 24;
  out[at + 5] = (lo >>> 16) & 0xff;
  out[at + 6] = (lo >>> 8) & 0xff;
  out[at + 7] = lo & 0xff;
}

/** The u64 of eight big-endian bytes at `at`. */
export function readU64(bytes: Uint8Array, at: number): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(at, false);
}

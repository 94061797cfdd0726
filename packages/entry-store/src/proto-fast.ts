// Internal helpers of the fast record codecs: unsigned varints below 2^53 as numbers.

/** Thrown inside a fast path to make the caller fall back to protobuf-es. */
export const FALLBACK: unique symbol = Symbol("fallback");

/** Bytes of the varint encoding of a non-negative safe integer. */
export function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Writes `n` (non-negative safe integer) as a varint at `pos`; returns the new position. */
export function writeVarint(out: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

/** Largest value the fast readers accept (7 varint bytes). */
export const FAST_MAX: number = 2 ** 49;

/** A cursor over bytes for the fast decoders. */
export class FastReader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  /** Reads a varint of at most 7 bytes ending before `end`, else throws {@link FALLBACK}. */
  varint(end: number): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= end) throw FALLBACK;
      const b = this.bytes[this.pos++] as number;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    throw FALLBACK;
  }
}

/** True when `n` is a bigint the fast encoders handle (0 ≤ n < 2^53). */
export function fastU64(n: bigint): boolean {
  return n >= 0n && n < 9007199254740992n;
}

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

const utf8 = new TextEncoder();

/**
 * A string as the fast encoders write it: the string itself when it is ASCII (its length is
 * then its UTF-8 length, and {@link writeUtf8} copies it byte by byte), else its UTF-8
 * bytes (as protobuf-es writes them: a lone surrogate becomes U+FFFD). Short ASCII strings
 * (ids, entry keys) are the usual case, and `TextEncoder.encode` costs several times more
 * than the loop for them.
 */
export function utf8Of(s: string): string | Uint8Array {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return utf8.encode(s);
  return s;
}

/** Writes what {@link utf8Of} returned at `pos`; returns the new position. */
export function writeUtf8(out: Uint8Array, pos: number, text: string | Uint8Array): number {
  if (typeof text !== "string") {
    out.set(text, pos);
    return pos + text.length;
  }
  for (let i = 0; i < text.length; i++) out[pos++] = text.charCodeAt(i);
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

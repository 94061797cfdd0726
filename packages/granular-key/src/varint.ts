import { alloc } from "./byte-pool.js";
import { KeyError } from "./key-error.js";

/** Longest accepted varint: 8 groups of 7 bits hold every safe integer (2^53 - 1). */
export const MAX_VARINT_BYTES = 8;

/** The result of {@link decodeVarint}. */
export interface DecodedVarint {
  /** The decoded unsigned integer, at most `Number.MAX_SAFE_INTEGER`. */
  readonly value: number;
  /** How many bytes the varint occupied. */
  readonly length: number;
}

function checkValue(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new KeyError(
      "out_of_range",
      `varint value must be a non-negative safe integer, got ${String(value)}`,
    );
  }
}

/** Number of bytes {@link encodeVarint} uses for `value` (1 for 0–127, …, 8 at most). */
export function varintLength(value: number): number {
  checkValue(value);
  let n = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

/**
 * Internal: writes the varint of a checked `value` at `pos`, returns the position after it.
 * @internal
 */
export function writeVarint(out: Uint8Array, pos: number, value: number): number {
  while (value >= 0x80) {
    out[pos++] = (value % 128) | 0x80;
    value = Math.floor(value / 128);
  }
  out[pos++] = value;
  return pos;
}

/**
 * Encodes `value` as an unsigned LEB128 varint: 7 bits per byte, least significant group
 * first, high bit set on every byte but the last. Used for string entry key lengths and
 * extension headers.
 *
 * @param value - a non-negative safe integer; anything else is `out_of_range`.
 * @example
 * ```ts
 * encodeVarint(300); // Uint8Array [0xac, 0x02]
 * ```
 */
export function encodeVarint(value: number): Uint8Array {
  const out = alloc(varintLength(value));
  writeVarint(out, 0, value);
  return out;
}

/**
 * Decodes the unsigned LEB128 varint at `bytes[offset]`. Only the canonical (shortest)
 * form is accepted: a final `0x00` group after a continuation byte is `bad_varint`, as
 * are more than 8 bytes and values above `Number.MAX_SAFE_INTEGER`; bytes that end
 * mid-varint are `truncated`.
 *
 * @param bytes - the buffer to read.
 * @param offset - where the varint starts. Default 0.
 * @example
 * ```ts
 * decodeVarint(new Uint8Array([0xac, 0x02])); // { value: 300, length: 2 }
 * ```
 */
export function decodeVarint(bytes: Uint8Array, offset = 0): DecodedVarint {
  if (!(bytes instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "varint input must be a Uint8Array");
  }
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new KeyError("out_of_range", `varint offset must be a non-negative integer`);
  }
  const value = readVarint(bytes, offset, "varint");
  return { value, length: varintEnd - offset };
}

/**
 * Internal: position after the varint most recently read by {@link readVarint}. A module
 * variable rather than a result object keeps key decoding allocation-free.
 * @internal
 */
export let varintEnd = 0;

/**
 * Internal: reads a canonical varint at `pos`, sets {@link varintEnd}, returns its value.
 * @internal
 */
export function readVarint(bytes: Uint8Array, pos: number, what: string): number {
  const end = bytes.length;
  if (pos >= end) throw new KeyError("truncated", `${what}: bytes end before the varint`);
  let b = bytes[pos] as number;
  if (b < 0x80) {
    varintEnd = pos + 1;
    return b;
  }
  let value = b & 0x7f;
  let scale = 128;
  for (let n = 1; ; n++) {
    const at = pos + n;
    if (n >= MAX_VARINT_BYTES) {
      throw new KeyError("bad_varint", `${what}: varint longer than ${MAX_VARINT_BYTES} bytes`);
    }
    if (at >= end) throw new KeyError("truncated", `${what}: bytes end inside the varint`);
    b = bytes[at] as number;
    value += (b & 0x7f) * scale;
    if (b < 0x80) {
      if (b === 0) {
        throw new KeyError("bad_varint", `${what}: non-canonical varint (redundant zero group)`);
      }
      if (value > Number.MAX_SAFE_INTEGER) {
        throw new KeyError("bad_varint", `${what}: varint value exceeds 2^53 - 1`);
      }
      varintEnd = at + 1;
      return value;
    }
    scale *= 128;
  }
}

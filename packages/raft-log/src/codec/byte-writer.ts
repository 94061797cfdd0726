import { RaftError } from "../core/raft-error.js";

const utf8 = new TextEncoder();
// A lone surrogate has no UTF-8 encoding; TextEncoder would silently write U+FFFD.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Encodes a string as UTF-8, refusing strings that are not well-formed UTF-16 (so that
 * decoding gives back exactly the same string).
 * @throws RaftError `invalid_utf8`
 */
export function encodeUtf8(value: string): Uint8Array {
  if (LONE_SURROGATE.test(value)) {
    throw new RaftError("invalid_utf8", "string contains a lone surrogate");
  }
  return utf8.encode(value);
}

/** Strings up to this long take the ASCII fast paths of the writer and the reader. */
export const SHORT_STRING = 64;

/** Every UTF-16 unit of `value` is below 0x80. */
function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** Append-only byte buffer with the primitive encodings of the log-entry format. */
export class ByteWriter {
  private buf: Uint8Array = new Uint8Array(64);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  /** One byte (0–255). */
  u8(value: number): this {
    this.reserve(1);
    this.buf[this.len++] = value;
    return this;
  }

  /** A big-endian u32 (fixed four bytes). */
  u32be(value: number): this {
    this.reserve(4);
    new DataView(this.buf.buffer, this.buf.byteOffset).setUint32(this.len, value);
    this.len += 4;
    return this;
  }

  /**
   * A minimal unsigned LEB128 varint of a safe integer (at most 8 bytes).
   * @throws RaftError `invalid_value` for negatives, fractions and unsafe integers.
   */
  /** A minimal unsigned LEB128 varint of a u64 given as a bigint (at most 10 bytes). */
  varint64(value: bigint): this {
    if (typeof value !== "bigint" || value < 0n || value > 0xffff_ffff_ffff_ffffn) {
      throw new RaftError("invalid_value", `varint64 needs a u64 bigint: ${String(value)}`);
    }
    let v = value;
    while (v >= 0x80n) {
      this.u8(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    return this.u8(Number(v));
  }

  varint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RaftError("invalid_value", `varint needs a non-negative safe integer: ${value}`);
    }
    this.reserve(8);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.len++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.len++] = v;
    return this;
  }

  /** Raw bytes, no length. */
  raw(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
    return this;
  }

  /** Varint length, then the bytes. */
  bytes(bytes: Uint8Array): this {
    return this.varint(bytes.length).raw(bytes);
  }

  /** Varint length, then the UTF-8 bytes. @throws RaftError `invalid_utf8` */
  string(value: string): this {
    const n = value.length;
    if (n <= SHORT_STRING && isAscii(value)) {
      // Ids and keys are mostly short ASCII: written in place, without TextEncoder (which
      // costs several times more for them) and the lone-surrogate check (ASCII has none).
      this.varint(n);
      this.reserve(n);
      for (let i = 0; i < n; i++) this.buf[this.len + i] = value.charCodeAt(i);
      this.len += n;
      return this;
    }
    return this.bytes(encodeUtf8(value));
  }

  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

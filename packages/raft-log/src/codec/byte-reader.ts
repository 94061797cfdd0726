import { RaftError } from "../core/raft-error.js";
import { SHORT_STRING } from "./byte-writer.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Cursor over bytes with strict decoders for the primitive encodings of the log-entry
 * format. Every failure is a {@link RaftError} carrying the byte offset.
 */
export class ByteReader {
  /** Current offset. */
  pos = 0;

  /** @param input - the bytes to read (not copied). */
  constructor(readonly input: Uint8Array) {}

  /** Bytes left. */
  get remaining(): number {
    return this.input.length - this.pos;
  }

  /** @throws RaftError `truncated` */
  u8(): number {
    const b = this.input[this.pos];
    if (b === undefined) throw new RaftError("truncated", "expected a byte", { offset: this.pos });
    this.pos++;
    return b;
  }

  /** @throws RaftError `truncated` */
  u32be(): number {
    if (this.remaining < 4) {
      throw new RaftError("truncated", "expected a 4-byte integer", { offset: this.pos });
    }
    const v = new DataView(this.input.buffer, this.input.byteOffset).getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  /**
   * A minimal unsigned LEB128 varint no larger than `max` (default: the largest safe
   * integer, so at most 8 bytes).
   * @throws RaftError `truncated`, `bad_varint` (too long or above `max`),
   * `non_minimal_varint` (a redundant final zero group).
   */
  varint(max: number = Number.MAX_SAFE_INTEGER): number {
    const start = this.pos;
    let value = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (i >= 8)
        throw new RaftError("bad_varint", "varint longer than 8 bytes", { offset: start });
      const b = this.input[this.pos];
      if (b === undefined) {
        throw new RaftError("truncated", "varint runs past the end", { offset: start });
      }
      this.pos++;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) {
          throw new RaftError("non_minimal_varint", "varint has a redundant zero group", {
            offset: start,
          });
        }
        break;
      }
      scale *= 0x80;
    }
    if (value > max) {
      throw new RaftError("bad_varint", `varint ${value} exceeds ${max}`, { offset: start });
    }
    return value;
  }

  /**
   * A minimal unsigned LEB128 varint of a u64 (at most 10 bytes), as a bigint.
   * @throws RaftError `truncated`, `bad_varint` (too long or above 2^64-1),
   * `non_minimal_varint`.
   */
  varint64(): bigint {
    const start = this.pos;
    let value = 0n;
    let shift = 0n;
    for (let i = 0; ; i++) {
      if (i >= 10)
        throw new RaftError("bad_varint", "varint longer than 10 bytes", { offset: start });
      const b = this.input[this.pos];
      if (b === undefined) {
        throw new RaftError("truncated", "varint runs past the end", { offset: start });
      }
      this.pos++;
      value |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) {
          throw new RaftError("non_minimal_varint", "varint has a redundant zero group", {
            offset: start,
          });
        }
        break;
      }
      shift += 7n;
    }
    if (value > 0xffff_ffff_ffff_ffffn) {
      throw new RaftError("bad_varint", `varint ${value} exceeds 2^64-1`, { offset: start });
    }
    return value;
  }

  /** `n` raw bytes (a view, not a copy). @throws RaftError `truncated` */
  raw(n: number): Uint8Array {
    if (n > this.remaining) {
      throw new RaftError("truncated", `length ${n} runs past the end`, { offset: this.pos });
    }
    const out = this.input.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Varint length, then that many bytes (a view). */
  bytes(): Uint8Array {
    return this.raw(this.varint());
  }

  /** Varint length, then UTF-8. @throws RaftError `invalid_utf8` and the above. */
  string(): string {
    const start = this.pos;
    const n = this.varint();
    if (n <= SHORT_STRING && n <= this.remaining) {
      // Short ASCII (the usual id or key) is always well-formed: decoded in place, without
      // TextDecoder and a view, which cost several times more for it.
      const input = this.input;
      const from = this.pos;
      let s = "";
      for (let i = from; i < from + n; i++) {
        const c = input[i] as number;
        if (c >= 0x80) {
          s = "";
          break;
        }
        s += String.fromCharCode(c);
      }
      if (s.length === n) {
        this.pos = from + n;
        return s;
      }
    }
    const b = this.raw(n);
    try {
      return utf8.decode(b);
    } catch (cause) {
      throw new RaftError("invalid_utf8", "string is not well-formed UTF-8", {
        offset: start,
        cause,
      });
    }
  }

  /** @throws RaftError `trailing_bytes` unless the input is fully consumed. */
  end(): void {
    if (this.remaining !== 0) {
      throw new RaftError("trailing_bytes", `${this.remaining} bytes after the value`, {
        offset: this.pos,
      });
    }
  }
}

// The remote-api wire encoding (zenoh-ext serialization): integers little-endian fixed width,
// bool one byte, strings and byte arrays a ULEB128 length then the bytes, options a bool then
// the value, vectors a ULEB128 count then the elements.

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder("utf-8", { fatal: true });

/** A truncated or malformed message. */
export class WireError extends Error {
  override readonly name = "WireError";
}

/** Reads remote-api values from one message, front to back. */
export class WireReader {
  private offset = 0;
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(n: number): number {
    const at = this.offset;
    if (at + n > this.bytes.byteLength)
      throw new WireError(`message truncated: need ${n} bytes at offset ${at}`);
    this.offset += n;
    return at;
  }

  u8(): number {
    return this.view.getUint8(this.need(1));
  }
  u16(): number {
    return this.view.getUint16(this.need(2), true);
  }
  u32(): number {
    return this.view.getUint32(this.need(4), true);
  }
  u64(): bigint {
    return this.view.getBigUint64(this.need(8), true);
  }
  bool(): boolean {
    return this.u8() !== 0;
  }
  private uleb(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.u8();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 49) throw new WireError("length prefix too long");
    }
  }
  bytesField(): Uint8Array {
    const n = this.uleb();
    const at = this.need(n);
    return this.bytes.subarray(at, at + n);
  }
  str(): string {
    try {
      return textDecoder.decode(this.bytesField());
    } catch (err) {
      if (err instanceof WireError) throw err;
      throw new WireError("string is not valid UTF-8");
    }
  }
  opt<T>(read: () => T): T | undefined {
    return this.bool() ? read() : undefined;
  }
}

/** Appends remote-api values to a growing message. */
export class WireWriter {
  private chunks: number[] = [];
  private parts: Uint8Array[] = [];

  private flush(): void {
    if (this.chunks.length > 0) {
      this.parts.push(Uint8Array.from(this.chunks));
      this.chunks = [];
    }
  }
  u8(v: number): this {
    this.chunks.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v).u8(v >>> 8);
  }
  u32(v: number): this {
    return this.u8(v)
      .u8(v >>> 8)
      .u8(v >>> 16)
      .u8(v >>> 24);
  }
  u64(v: bigint): this {
    for (let i = 0n; i < 8n; i++) this.u8(Number((v >> (8n * i)) & 0xffn));
    return this;
  }
  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }
  private uleb(n: number): this {
    let v = n;
    do {
      let b = v % 128;
      v = Math.floor(v / 128);
      if (v > 0) b |= 0x80;
      this.u8(b);
    } while (v > 0);
    return this;
  }
  bytesField(b: Uint8Array): this {
    this.uleb(b.byteLength);
    this.flush();
    this.parts.push(b);
    return this;
  }
  str(s: string): this {
    return this.bytesField(textEncoder.encode(s));
  }
  opt<T>(v: T | undefined, write: (v: T) => void): this {
    this.bool(v !== undefined);
    if (v !== undefined) write(v);
    return this;
  }
  finish(): Uint8Array {
    this.flush();
    const total = this.parts.reduce((n, p) => n + p.byteLength, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  }
}

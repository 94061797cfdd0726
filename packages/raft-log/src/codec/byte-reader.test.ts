import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteReader } from "./byte-reader.js";
import { ByteWriter } from "./byte-writer.js";

describe("varints", () => {
  it("round-trip every safe integer with a minimal encoding", () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(), fc.maxSafeNat()), (n) => {
        const bytes = new ByteWriter().varint(n).finish();
        const r = new ByteReader(bytes);
        expect(r.varint()).toBe(n);
        r.end();
        // Minimal: the last byte is non-zero unless the value is 0 itself.
        expect(bytes.length === 1 || bytes[bytes.length - 1] !== 0).toBe(true);
      }),
    );
  });

  it("encodes the edges as LEB128", () => {
    const enc = (n: number) => Buffer.from(new ByteWriter().varint(n).finish()).toString("hex");
    expect(enc(0)).toBe("00");
    expect(enc(127)).toBe("7f");
    expect(enc(128)).toBe("8001");
    expect(enc(Number.MAX_SAFE_INTEGER)).toBe("ffffffffffffff0f");
  });

  it("rejects non-minimal, overlong, oversized and truncated varints", () => {
    const dec = (hex: string, max?: number) => () =>
      new ByteReader(new Uint8Array(Buffer.from(hex, "hex"))).varint(max);
    expect(dec("8000")).toThrow("[non_minimal_varint]");
    expect(dec("ffffffffffffff10")).toThrow("[bad_varint]");
    expect(dec("808080808080808001")).toThrow("[bad_varint]");
    expect(dec("8002", 255)).toThrow("[bad_varint]");
    expect(dec("80")).toThrow("[truncated]");
    expect(dec("")).toThrow("[truncated]");
  });

  it("keeps a leading byte-order mark in strings", () => {
    const bytes = new ByteWriter().string("\uFEFFx").finish();
    expect(new ByteReader(bytes).string()).toBe("\uFEFFx");
  });
});

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

describe("strings", () => {
  const utf8 = new TextEncoder();
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  // Every path: short and long (past the ASCII fast paths' 64), ASCII and not, lone surrogates.
  const text = fc.oneof(
    fc.string({ maxLength: 100 }),
    fc.string({ unit: "binary", maxLength: 100 }),
    fc.constantFrom("a".repeat(64), "a".repeat(65), `${"a".repeat(63)}\u0080`, "\u007f", "\u0080"),
  );

  it("write UTF-8 behind a varint length, read back the same string, refuse lone surrogates", () => {
    fc.assert(
      fc.property(text, (s) => {
        if (lone.test(s)) {
          expect(() => new ByteWriter().string(s)).toThrow(/lone surrogate/);
          return;
        }
        const bytes = new ByteWriter().string(s).finish();
        const body = utf8.encode(s);
        expect(bytes).toEqual(
          new Uint8Array([...new ByteWriter().varint(body.length).finish(), ...body]),
        );
        const r = new ByteReader(bytes);
        expect(r.string()).toBe(s);
        r.end();
      }),
      { numRuns: 2000 },
    );
  });

  it("refuse bytes that are not well-formed UTF-8, short or long", () => {
    for (const body of [[0x80], [0x61, 0xc3], [...new Array(70).fill(0x61), 0xff]]) {
      const bytes = new ByteWriter().bytes(Uint8Array.from(body)).finish();
      expect(() => new ByteReader(bytes).string()).toThrow(/well-formed/);
    }
  });
});

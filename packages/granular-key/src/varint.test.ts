import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hex } from "../test/arbitraries.js";
import { isKeyError } from "./key-error.js";
import { decodeVarint, encodeVarint, varintLength } from "./varint.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!isKeyError(err)) throw err;
    return err.code;
  }
}

describe("varint", () => {
  it("matches LEB128 golden vectors", () => {
    expect(hex(encodeVarint(0))).toBe("00");
    expect(hex(encodeVarint(4))).toBe("04");
    expect(hex(encodeVarint(127))).toBe("7f");
    expect(hex(encodeVarint(128))).toBe("8001");
    expect(hex(encodeVarint(300))).toBe("ac02");
    expect(hex(encodeVarint(16384))).toBe("808001");
    expect(hex(encodeVarint(0xffff_ffff))).toBe("ffffffff0f");
    expect(hex(encodeVarint(Number.MAX_SAFE_INTEGER))).toBe("ffffffffffffff0f");
    expect(decodeVarint(Uint8Array.of(0xac, 0x02))).toEqual({ value: 300, length: 2 });
    expect(decodeVarint(Uint8Array.of(0xff, 0x05, 0xac, 0x02), 2)).toEqual({
      value: 300,
      length: 2,
    });
  });

  it("round-trips every safe integer and reports its length", () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(), fc.maxSafeNat()), (value) => {
        const bytes = encodeVarint(value);
        expect(bytes.length).toBe(varintLength(value));
        expect(decodeVarint(bytes)).toEqual({ value, length: bytes.length });
      }),
      { numRuns: 2000 },
    );
  });

  it("rejects non-canonical, over-long, oversized and truncated varints", () => {
    expect(codeOf(() => decodeVarint(Uint8Array.of(0x80, 0x00)))).toBe("bad_varint");
    expect(codeOf(() => decodeVarint(Uint8Array.of(0x84, 0x80, 0x00)))).toBe("bad_varint");
    expect(codeOf(() => decodeVarint(new Uint8Array(9).fill(0x81)))).toBe("bad_varint");
    expect(codeOf(() => decodeVarint(Uint8Array.of(...new Array(8).fill(0xff))))).toBe(
      "bad_varint",
    );
    // 2^53 needs 8 groups and exceeds the safe range.
    expect(
      codeOf(() => decodeVarint(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10))),
    ).toBe("bad_varint");
    expect(codeOf(() => decodeVarint(new Uint8Array(0)))).toBe("truncated");
    expect(codeOf(() => decodeVarint(Uint8Array.of(0x80)))).toBe("truncated");
    expect(codeOf(() => decodeVarint(Uint8Array.of(0x01), 1))).toBe("truncated");
  });

  it("rejects values it cannot encode", () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(codeOf(() => encodeVarint(bad))).toBe("out_of_range");
    }
    expect(codeOf(() => decodeVarint(Uint8Array.of(0), -1))).toBe("out_of_range");
    expect(codeOf(() => decodeVarint([0] as unknown as Uint8Array))).toBe("invalid_argument");
  });

  it("decodes every byte string to a canonical varint or a KeyError (fuzz)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (bytes) => {
        let decoded: { value: number; length: number };
        try {
          decoded = decodeVarint(bytes);
        } catch (err) {
          expect(isKeyError(err)).toBe(true);
          return;
        }
        // Canonical: re-encoding yields exactly the bytes consumed.
        expect(hex(encodeVarint(decoded.value))).toBe(hex(bytes.subarray(0, decoded.length)));
      }),
      { numRuns: 20_000 },
    );
  });
});

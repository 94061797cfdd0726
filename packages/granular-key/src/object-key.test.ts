import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyId, hex } from "../test/arbitraries.js";
import { isKeyError } from "./key-error.js";
import { encodeEntryKey, encodeEventConfigKey, encodeMetadataKey } from "./object-key.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!isKeyError(err)) throw err;
    return err.code;
  }
}

const USER_123 = "757365722d313233"; // "user-123"

describe("golden vectors (seed 000 §6, seed 003 §4.2)", () => {
  it("metadata key of user-123", () => {
    expect(hex(encodeMetadataKey("user-123"))).toBe(`${USER_123}0000`);
  });

  it("event config key", () => {
    expect(hex(encodeEventConfigKey("user-123"))).toBe(`${USER_123}0001`);
  });

  it("numeric entry 42", () => {
    expect(hex(encodeEntryKey("user-123", { numeric: 42 }))).toBe(`${USER_123}00100000002a`);
    expect(hex(encodeEntryKey("user-123", { numeric: 0 }))).toBe(`${USER_123}001000000000`);
    expect(hex(encodeEntryKey("user-123", { numeric: 4294967295 }))).toBe(
      `${USER_123}0010ffffffff`,
    );
  });

  it('string entry "name"', () => {
    expect(hex(encodeEntryKey("user-123", { str: "name" }))).toBe(`${USER_123}0011046e616d65`);
  });

  it("numeric object ids are unpadded decimal ASCII", () => {
    expect(hex(encodeMetadataKey("12345"))).toBe("31323334350000");
    expect(hex(encodeEntryKey("42", { numeric: 7 }))).toBe("3432001000000007");
  });

  it("string keys of 128+ bytes get a two-byte length", () => {
    const key = "k".repeat(200);
    const bytes = encodeEntryKey("a", { str: key });
    expect(hex(bytes.subarray(0, 5))).toBe("610011c801");
    expect(bytes.length).toBe(5 + 200);
  });

  it("encodes non-ASCII ids and keys as UTF-8, long and short", () => {
    expect(hex(encodeMetadataKey("é"))).toBe("c3a90000");
    expect(hex(encodeEntryKey("x", { str: "\u{1f600}" }))).toBe("78001104f09f9880");
    const long = "ü".repeat(80);
    expect(hex(encodeMetadataKey(long))).toBe(`${"c3bc".repeat(80)}0000`);
    const longAscii = "a".repeat(160);
    expect(hex(encodeMetadataKey(longAscii))).toBe(`${"61".repeat(160)}0000`);
  });

  it("encodes ids too large for the slab pool", () => {
    for (const big of [
      "x".repeat(5000),
      "é".repeat(1500),
      `${"a".repeat(30)}ü${"b".repeat(2000)}`,
    ]) {
      const expected = Buffer.concat([Buffer.from(big, "utf8"), Buffer.of(0, 0x10, 0, 0, 0, 9)]);
      expect(hex(encodeEntryKey(big, { numeric: 9 }))).toBe(expected.toString("hex"));
    }
  });

  it("agrees with Buffer on entry keys for every accepted id and key (property)", () => {
    fc.assert(
      fc.property(anyId, fc.string({ unit: "grapheme", maxLength: 60 }), (id, str) => {
        const k = Buffer.from(str, "utf8");
        const len = k.length < 128 ? [k.length] : [(k.length & 0x7f) | 0x80, k.length >> 7];
        const expected = Buffer.concat([Buffer.from(id, "utf8"), Buffer.of(0, 0x11, ...len), k]);
        expect(hex(encodeEntryKey(id, { str }))).toBe(expected.toString("hex"));
      }),
      { numRuns: 1000 },
    );
  });

  it("agrees with TextEncoder on every accepted id (property)", () => {
    fc.assert(
      fc.property(anyId, (id) => {
        const expected = Buffer.concat([Buffer.from(id, "utf8"), Buffer.of(0, 0)]);
        expect(hex(encodeMetadataKey(id))).toBe(expected.toString("hex"));
      }),
      { numRuns: 1000 },
    );
  });
});

describe("encode errors", () => {
  it("rejects ids the layout cannot hold", () => {
    expect(codeOf(() => encodeMetadataKey(""))).toBe("empty_id");
    expect(codeOf(() => encodeMetadataKey("a\0b"))).toBe("nul_in_id");
    expect(codeOf(() => encodeMetadataKey(`${"x".repeat(40)}\0`))).toBe("nul_in_id");
    expect(codeOf(() => encodeMetadataKey("\ud800"))).toBe("invalid_utf8");
    expect(codeOf(() => encodeMetadataKey(`${"x".repeat(40)}\udc00`))).toBe("invalid_utf8");
    expect(codeOf(() => encodeMetadataKey(42 as unknown as string))).toBe("invalid_argument");
  });

  it("rejects entry keys the layout cannot hold", () => {
    for (const numeric of [-1, 1.5, 2 ** 32, Number.NaN]) {
      expect(codeOf(() => encodeEntryKey("a", { numeric }))).toBe("out_of_range");
    }
    expect(
      codeOf(() => encodeEntryKey("a", { numeric: "1" } as unknown as { numeric: number })),
    ).toBe("out_of_range");
    expect(codeOf(() => encodeEntryKey("a", { str: "\udfff" }))).toBe("invalid_utf8");
    expect(codeOf(() => encodeEntryKey("a", { str: 1 } as unknown as { str: string }))).toBe(
      "invalid_argument",
    );
    expect(
      codeOf(() => encodeEntryKey("a", { numeric: 1, str: "1" } as unknown as { str: string })),
    ).toBe("invalid_argument");
    expect(codeOf(() => encodeEntryKey("a", {} as unknown as { str: string }))).toBe(
      "invalid_argument",
    );
    expect(codeOf(() => encodeEntryKey("a", null as unknown as { str: string }))).toBe(
      "invalid_argument",
    );
    expect(codeOf(() => encodeEntryKey("", { numeric: 1 }))).toBe("empty_id");
  });

  it("allows what only normalization forbids: empty and NUL-holding string keys", () => {
    expect(hex(encodeEntryKey("a", { str: "" }))).toBe("61001100");
    expect(hex(encodeEntryKey("a", { str: "\0" }))).toBe("6100110100");
  });
});

describe("returned arrays", () => {
  it("never alias each other", () => {
    const keys = Array.from({ length: 5000 }, (_, i) => encodeEntryKey(`id-${i}`, { numeric: i }));
    keys.forEach((key, i) => {
      expect(hex(key)).toBe(hex(encodeEntryKey(`id-${i}`, { numeric: i })));
    });
  });
});

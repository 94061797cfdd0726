import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryKey, hex, id, utf8 } from "../test/arbitraries.js";
import { decodeKey } from "./decode-key.js";
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

const bytes = (...parts: (string | number[])[]): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === "string" ? [...utf8(p)] : p)));

describe("decodeKey", () => {
  it("round-trips every record kind (property)", () => {
    fc.assert(
      fc.property(id, entryKey, (objectId, key) => {
        expect(decodeKey(encodeMetadataKey(objectId))).toEqual({
          id: objectId,
          record: "metadata",
        });
        expect(decodeKey(encodeEventConfigKey(objectId))).toEqual({
          id: objectId,
          record: "event_config",
        });
        const entry = decodeKey(encodeEntryKey(objectId, key));
        expect(entry).toEqual({
          id: objectId,
          record: "numeric" in key ? "numeric_entry" : "string_entry",
          key,
        });
      }),
      { numRuns: 3000 },
    );
  });

  it("decodes the golden vectors", () => {
    expect(decodeKey(bytes("user-123", [0, 0x10, 0, 0, 0, 0x2a]))).toEqual({
      id: "user-123",
      record: "numeric_entry",
      key: { numeric: 42 },
    });
    expect(decodeKey(bytes("user-123", [0, 0x11, 4], "name"))).toEqual({
      id: "user-123",
      record: "string_entry",
      key: { str: "name" },
    });
    expect(decodeKey(bytes("x", [0, 0x10, 0xff, 0xff, 0xff, 0xff]))).toMatchObject({
      key: { numeric: 4294967295 },
    });
  });

  it("decodes the reserved view blob and extension records", () => {
    expect(decodeKey(bytes("a", [0, 0x02]))).toEqual({ id: "a", record: "view_blob" });
    const ext = decodeKey(bytes("a", [0, 0x90, 0xac, 0x02, 1, 2, 3]));
    expect(ext.record).toBe("extension");
    if (ext.record !== "extension") return;
    expect(ext.extension.recordType).toBe(0x90);
    expect(ext.extension.header).toBe(300);
    expect(hex(ext.extension.payload)).toBe("010203");
    expect(decodeKey(bytes("a", [0, 0xff, 0]))).toMatchObject({
      extension: { recordType: 0xff, header: 0 },
    });
  });

  it("keeps a leading BOM and non-ASCII in ids and keys", () => {
    const withBom = "\ufeffid-é";
    expect(decodeKey(encodeMetadataKey(withBom))).toEqual({ id: withBom, record: "metadata" });
    const longKey = "\ufeff".repeat(30);
    expect(decodeKey(encodeEntryKey("a".repeat(100), { str: longKey }))).toMatchObject({
      key: { str: longKey },
    });
  });

  it("rejects malformed keys with the right code", () => {
    const cases: [Uint8Array, string][] = [
      [bytes("abc"), "truncated"],
      [bytes("abc", [0]), "truncated"],
      [bytes([0, 0]), "empty_id"],
      [bytes([0]), "empty_id"],
      [new Uint8Array(0), "truncated"],
      [bytes("a", [0, 0x10, 0, 0, 1]), "truncated"],
      [bytes("a", [0, 0x11]), "truncated"],
      [bytes("a", [0, 0x11, 0x80]), "truncated"],
      [bytes("a", [0, 0x11, 5], "abcd"), "truncated"],
      [bytes("a", [0, 0x11, 0x84, 0x00], "abcd"), "bad_varint"],
      [bytes("a", [0, 0x11, ...new Array(9).fill(0x80), 1]), "bad_varint"],
      [bytes("a", [0, 0x90]), "truncated"],
      [bytes("a", [0, 0x90, 0x80, 0x00]), "bad_varint"],
      [bytes("a", [0, 0x03]), "unknown_record"],
      [bytes("a", [0, 0x0f]), "unknown_record"],
      [bytes("a", [0, 0x12]), "unknown_record"],
      [bytes("a", [0, 0x7f]), "unknown_record"],
      [bytes("a", [0, 0x00, 0x00]), "trailing_bytes"],
      [bytes("a", [0, 0x01, 0x01]), "trailing_bytes"],
      [bytes("a", [0, 0x02, 0xff]), "trailing_bytes"],
      [bytes("a", [0, 0x10, 0, 0, 0, 1, 9]), "trailing_bytes"],
      [bytes("a", [0, 0x11, 1], "ab"), "trailing_bytes"],
      [bytes([0xff], [0, 0]), "invalid_utf8"],
      [bytes([0xc3], [0, 0]), "invalid_utf8"],
      [bytes([0xc0, 0xaf], [0, 0]), "invalid_utf8"], // overlong "/"
      [bytes([0xed, 0xa0, 0x80], [0, 0]), "invalid_utf8"], // encoded surrogate
      [bytes("x".repeat(40), [0xf4, 0x90, 0x80, 0x80], [0, 0]), "invalid_utf8"], // > U+10FFFF
      [bytes("a", [0, 0x11, 1, 0x80]), "invalid_utf8"],
      [bytes("a", [0, 0x11, 30, ...new Array(30).fill(0xfe)]), "invalid_utf8"],
    ];
    for (const [input, code] of cases) {
      expect({ input: hex(input), code: codeOf(() => decodeKey(input)) }).toEqual({
        input: hex(input),
        code,
      });
    }
    expect(codeOf(() => decodeKey("a" as unknown as Uint8Array))).toBe("invalid_argument");
  });

  it("decodes a key that is a view into a larger buffer", () => {
    const buffer = bytes([9, 9], "ab", [0, 0x10, 0, 0, 0, 5], [9]);
    expect(decodeKey(buffer.subarray(2, 10))).toEqual({
      id: "ab",
      record: "numeric_entry",
      key: { numeric: 5 },
    });
  });

  it("either decodes or throws a KeyError for any bytes, and re-encodes canonically (fuzz)", () => {
    const tail = fc.oneof(
      fc.uint8Array({ maxLength: 12 }),
      fc
        .tuple(fc.constantFrom(0x00, 0x01, 0x02, 0x10, 0x11, 0x90), fc.uint8Array({ maxLength: 8 }))
        .map(([t, rest]) => Uint8Array.of(t, ...rest)),
    );
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc
        .tuple(fc.uint8Array({ maxLength: 6 }), tail)
        .map(([head, rest]) => Uint8Array.of(...head, 0, ...rest)),
    );
    fc.assert(
      fc.property(input, (key) => {
        let decoded: ReturnType<typeof decodeKey>;
        try {
          decoded = decodeKey(key);
        } catch (err) {
          expect(isKeyError(err)).toBe(true);
          return;
        }
        // Anything accepted re-encodes to the same bytes (one encoding per key).
        if (decoded.record === "metadata")
          expect(hex(encodeMetadataKey(decoded.id))).toBe(hex(key));
        if (decoded.record === "event_config") {
          expect(hex(encodeEventConfigKey(decoded.id))).toBe(hex(key));
        }
        if (decoded.record === "numeric_entry" || decoded.record === "string_entry") {
          expect(hex(encodeEntryKey(decoded.id, decoded.key))).toBe(hex(key));
        }
      }),
      { numRuns: 50_000 },
    );
  });
});

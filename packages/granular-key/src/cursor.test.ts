import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryKey, hex, id, prefixyId } from "../test/arbitraries.js";
import { decodeCursor, decodeListCursor, encodeCursor, encodeListCursor } from "./cursor.js";
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

describe("entry cursors", () => {
  it("round-trip the last key for every record of the object (property)", () => {
    fc.assert(
      fc.property(id, entryKey, (objectId, key) => {
        for (const last of [
          encodeEntryKey(objectId, key),
          encodeMetadataKey(objectId),
          encodeEventConfigKey(objectId),
        ]) {
          expect(hex(decodeCursor(objectId, encodeCursor(objectId, last)))).toBe(hex(last));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("have a documented layout: version, kind, tag, key suffix, check", () => {
    const cursor = encodeCursor("user-123", encodeEntryKey("user-123", { str: "name" }));
    expect(cursor[0]).toBe(1);
    expect(cursor[1]).toBe(1);
    expect(hex(cursor.subarray(6, cursor.length - 4))).toBe("11046e616d65");
    expect(cursor.length).toBe(6 + 6 + 4);
  });

  it("reject a cursor of another object as foreign, also for prefix ids (property)", () => {
    fc.assert(
      fc.property(prefixyId, prefixyId, entryKey, (a, b, key) => {
        fc.pre(a !== b);
        const cursor = encodeCursor(a, encodeEntryKey(a, key));
        expect(codeOf(() => decodeCursor(b, cursor))).toBe("foreign_cursor");
      }),
      { numRuns: 1000 },
    );
  });

  it("reject every single-byte corruption and every truncation as bad_cursor", () => {
    const cursor = encodeCursor("obj", encodeEntryKey("obj", { str: "some-key" }));
    for (let i = 0; i < cursor.length; i++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const damaged = cursor.slice();
        damaged[i] = (damaged[i] as number) ^ flip;
        expect(codeOf(() => decodeCursor("obj", damaged))).toBe("bad_cursor");
      }
    }
    for (let n = 0; n < cursor.length; n++) {
      expect(codeOf(() => decodeCursor("obj", cursor.subarray(0, n)))).toBe("bad_cursor");
    }
  });

  it("refuse to encode a key of another object or garbage", () => {
    expect(codeOf(() => encodeCursor("a", encodeMetadataKey("ab")))).toBe("out_of_range");
    expect(codeOf(() => encodeCursor("ab", encodeMetadataKey("a")))).toBe("out_of_range");
    expect(codeOf(() => encodeCursor("a", Uint8Array.of(0x61, 0)))).toBe("out_of_range");
    expect(codeOf(() => encodeCursor("a", Uint8Array.of(0x61, 0, 0x33)))).toBe("unknown_record");
    expect(codeOf(() => encodeCursor("a", "x" as unknown as Uint8Array))).toBe("invalid_argument");
    expect(codeOf(() => decodeCursor("a", "x" as unknown as Uint8Array))).toBe("invalid_argument");
  });

  it("decode random bytes to a key of the object or a KeyError, never anything else (fuzz)", () => {
    const valid = encodeCursor("obj", encodeEntryKey("obj", { numeric: 7 }));
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      // Mutations of a valid cursor: splice random bytes in.
      fc
        .tuple(fc.nat(valid.length), fc.uint8Array({ minLength: 1, maxLength: 4 }))
        .map(([at, bytes]) =>
          Uint8Array.of(...valid.subarray(0, at), ...bytes, ...valid.subarray(at)),
        ),
    );
    fc.assert(
      fc.property(input, (bytes) => {
        try {
          const key = decodeCursor("obj", bytes);
          expect(hex(key.subarray(0, 4))).toBe("6f626a00");
        } catch (err) {
          expect(isKeyError(err)).toBe(true);
        }
        try {
          decodeListCursor("o", bytes);
        } catch (err) {
          expect(isKeyError(err)).toBe(true);
        }
      }),
      { numRuns: 30_000 },
    );
  });

  it("decode re-sealed random payloads to a valid key or bad_cursor (fuzz)", () => {
    const header = encodeCursor("obj", encodeMetadataKey("obj")).subarray(0, 6);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (payload) => {
        const cursor = reseal(header, payload);
        try {
          const key = decodeCursor("obj", cursor);
          expect(hex(key)).toBe(`6f626a00${hex(payload)}`);
        } catch (err) {
          expect(isKeyError(err) && err.code).toBe("bad_cursor");
        }
      }),
      { numRuns: 20_000 },
    );
  });

  it("report a re-sealed cursor whose payload is not a key as bad_cursor with the cause", () => {
    const header = encodeCursor("obj", encodeMetadataKey("obj")).subarray(0, 6);
    const forged = reseal(header, Uint8Array.of(0x33));
    const err = (() => {
      try {
        decodeCursor("obj", forged);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(isKeyError(err) && err.code).toBe("bad_cursor");
    expect(isKeyError(err) && isKeyError(err.cause) && err.cause.code).toBe("unknown_record");
    // A wrong version with a valid checksum is bad_cursor too.
    const v2 = reseal(Uint8Array.of(2, ...header.subarray(1)), Uint8Array.of(0));
    expect(codeOf(() => decodeCursor("obj", v2))).toBe("bad_cursor");
    const kind9 = reseal(Uint8Array.of(1, 9, ...header.subarray(2)), Uint8Array.of(0));
    expect(codeOf(() => decodeCursor("obj", kind9))).toBe("bad_cursor");
  });
});

/** Builds header + payload + the FNV-1a check, independently of the codec. */
function reseal(header: Uint8Array, payload: Uint8Array): Uint8Array {
  const out = Uint8Array.of(...header, ...payload, 0, 0, 0, 0);
  let h = 0x6f64676d;
  for (let i = 0; i < out.length - 4; i++) {
    h ^= out[i] as number;
    h = Math.imul(h, 0x01000193);
  }
  h >>>= 0;
  out.set([h >>> 24, (h >>> 16) & 0xff, (h >>> 8) & 0xff, h & 0xff], out.length - 4);
  return out;
}

describe("list cursors", () => {
  it("round-trip and bind to the id prefix", () => {
    const last = encodeMetadataKey("user-123");
    for (const prefix of [undefined, "", "u", "user-"]) {
      const cursor = encodeListCursor(prefix, last);
      expect(hex(decodeListCursor(prefix, cursor))).toBe(hex(last));
    }
    expect(hex(decodeListCursor("", encodeListCursor(undefined, last)))).toBe(hex(last));
    expect(codeOf(() => decodeListCursor("us", encodeListCursor("u", last)))).toBe(
      "foreign_cursor",
    );
    expect(codeOf(() => decodeListCursor(undefined, encodeListCursor("u", last)))).toBe(
      "foreign_cursor",
    );
  });

  it("do not mix with entry cursors", () => {
    const key = encodeMetadataKey("a");
    expect(codeOf(() => decodeCursor("a", encodeListCursor(undefined, key)))).toBe(
      "foreign_cursor",
    );
    expect(codeOf(() => decodeListCursor(undefined, encodeCursor("a", key)))).toBe(
      "foreign_cursor",
    );
  });

  it("refuse keys outside the listing", () => {
    expect(codeOf(() => encodeListCursor("b", encodeMetadataKey("a")))).toBe("out_of_range");
    expect(codeOf(() => encodeListCursor(undefined, Uint8Array.of(0, 0)))).toBe("out_of_range");
    expect(codeOf(() => encodeListCursor(undefined, Uint8Array.of(0x61)))).toBe("truncated");
  });

  it("reject every single-byte corruption", () => {
    const cursor = encodeListCursor("us", encodeMetadataKey("user-1"));
    for (let i = 0; i < cursor.length; i++) {
      const damaged = cursor.slice();
      damaged[i] = (damaged[i] as number) ^ 0x20;
      expect(codeOf(() => decodeListCursor("us", damaged))).toBe("bad_cursor");
    }
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isGatewayError } from "./gateway-error.js";
import {
  keyRef,
  objectRef,
  parseKeySegment,
  parseObjectSegment,
  parsePartitionSegment,
  rawPathSegments,
} from "./path-segments.js";

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return isGatewayError(err) ? err.code : "other";
  }
}

describe("rawPathSegments", () => {
  it("keeps escapes and drops query and fragment", () => {
    expect(rawPathSegments("http://h:1/api/class/a%2Fb/0?x=%2F#f")).toEqual([
      "",
      "api",
      "class",
      "a%2Fb",
      "0",
    ]);
  });
});

describe("parseObjectSegment", () => {
  it("digits fitting u64 are numeric, canonicalized", () => {
    expect(parseObjectSegment("042", {})).toEqual({ kind: "numeric", id: "42", numeric: 42n });
    expect(parseObjectSegment("18446744073709551615", {}).kind).toBe("numeric");
    expect(parseObjectSegment("18446744073709551616", {})).toEqual({
      kind: "string",
      id: "18446744073709551616",
    });
  });
  it("decodes and normalizes strings; rejects / and dot segments and bad escapes", () => {
    expect(parseObjectSegment("Ord%5F1", {})).toEqual({ kind: "string", id: "ord_1" });
    expect(code(() => parseObjectSegment("a%2Fb", {}))).toBe("bad_request");
    expect(code(() => parseObjectSegment("..", {}))).toBe("bad_request");
    expect(code(() => parseObjectSegment("%E0%A4%A", {}))).toBe("bad_request");
    expect(code(() => parseObjectSegment("caf%C3%A9", {}))).toBe("bad_request");
    expect(parseObjectSegment("Caf%C3%A9", { unicode: true })).toEqual({
      kind: "string",
      id: "café",
    });
    expect(code(() => parseObjectSegment("a%2Fb", { unicode: true }))).toBe("bad_request");
    expect(code(() => parseObjectSegment("abcdefghi", { maxLength: 8 }))).toBe("bad_request");
  });
  it("property: any string either parses to a normalized id that re-parses to itself, or is a 400", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.stringMatching(/^[0-9]{1,22}$/)),
        fc.boolean(),
        (s, unicode) => {
          const raw = encodeURIComponent(s);
          let id: ReturnType<typeof parseObjectSegment>;
          try {
            id = parseObjectSegment(raw, { unicode });
          } catch (err) {
            expect(
              isGatewayError(err) && err.code === "bad_request" && err.rawMessage.length > 0,
            ).toBe(true);
            return;
          }
          expect(parseObjectSegment(encodeURIComponent(id.id), { unicode }).id).toBe(id.id);
          expect(id.id).not.toContain("/");
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("parseKeySegment", () => {
  it("digits fitting u32 are the numeric key (path rule), others are string keys", () => {
    expect(parseKeySegment("007", {})).toEqual({ kind: "numeric", key: "7", numeric: 7 });
    expect(parseKeySegment("4294967295", {}).kind).toBe("numeric");
    expect(parseKeySegment("4294967296", {})).toEqual({ kind: "string", key: "4294967296" });
    expect(parseKeySegment("Status", {})).toEqual({ kind: "string", key: "status" });
    expect(code(() => parseKeySegment("a b", {}))).toBe("bad_request");
  });
});

describe("parsePartitionSegment and wire refs", () => {
  it("accepts 0..2^31-1 only", () => {
    expect(parsePartitionSegment("0")).toBe(0);
    expect(parsePartitionSegment("2147483647")).toBe(2147483647);
    expect(code(() => parsePartitionSegment("2147483648"))).toBe("bad_request");
    expect(code(() => parsePartitionSegment("-1"))).toBe("bad_request");
    expect(code(() => parsePartitionSegment("1e3"))).toBe("bad_request");
  });
  it("numeric 0 travels as the string id, other numbers as object_id", () => {
    expect(objectRef({ kind: "numeric", id: "0", numeric: 0n })).toEqual({
      objectId: 0n,
      objectIdStr: "0",
    });
    expect(objectRef({ kind: "numeric", id: "5", numeric: 5n })).toEqual({ objectId: 5n });
    expect(objectRef({ kind: "string", id: "x" })).toEqual({ objectId: 0n, objectIdStr: "x" });
    expect(keyRef({ kind: "numeric", key: "0", numeric: 0 })).toEqual({ key: 0 });
    expect(keyRef({ kind: "string", key: "k" })).toEqual({ key: 0, keyStr: "k" });
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type IdErrorCode, isIdError } from "./id-error.js";
import { buildIdentity, parsePathSegment } from "./object-identity.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

const U64_MAX = 2n ** 64n - 1n;

describe("buildIdentity", () => {
  it("normalizes a string id (seed 001 integration example)", () => {
    expect(buildIdentity({ str: "User-123" })).toEqual({ kind: "string", id: "user-123" });
  });

  it("turns a numeric id into its canonical decimal storage string", () => {
    expect(buildIdentity({ numeric: 42 })).toEqual({ kind: "numeric", id: "42", numeric: 42n });
    expect(buildIdentity({ numeric: 42n })).toEqual({ kind: "numeric", id: "42", numeric: 42n });
    expect(buildIdentity({ numeric: U64_MAX })).toEqual({
      kind: "numeric",
      id: "18446744073709551615",
      numeric: U64_MAX,
    });
    expect(buildIdentity({ numeric: Number.MAX_SAFE_INTEGER }).id).toBe("9007199254740991");
  });

  it('gives numeric N and string "N" the same storage id', () => {
    expect(buildIdentity({ numeric: 7 }).id).toBe(buildIdentity({ str: "7" }).id);
  });

  it("requires exactly one form", () => {
    expect(codeOf(() => buildIdentity({ numeric: 1, str: "a" }))).toBe("both_provided");
    expect(codeOf(() => buildIdentity({ numeric: 1n, str: "a" }))).toBe("both_provided");
    expect(codeOf(() => buildIdentity({}))).toBe("none_provided");
    expect(codeOf(() => buildIdentity({ numeric: 0 }))).toBe("none_provided");
    expect(codeOf(() => buildIdentity({ numeric: 0n }))).toBe("none_provided");
    expect(codeOf(() => buildIdentity({ numeric: 0, str: "" }))).toBe("none_provided");
    expect(codeOf(() => buildIdentity({ str: "" }))).toBe("none_provided");
  });

  it("treats numeric 0 and an empty string as absent (proto3 defaults)", () => {
    expect(buildIdentity({ numeric: 0, str: "A" })).toEqual({ kind: "string", id: "a" });
    expect(buildIdentity({ numeric: 5n, str: "" })).toEqual({
      kind: "numeric",
      id: "5",
      numeric: 5n,
    });
  });

  it("rejects numbers outside u64, negative or non-integer", () => {
    for (const n of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, -1n, U64_MAX + 1n]) {
      expect(
        codeOf(() => buildIdentity({ numeric: n })),
        String(n),
      ).toBe("out_of_range");
    }
    // An invalid numeric is reported even when a string is given too.
    expect(codeOf(() => buildIdentity({ numeric: -1, str: "a" }))).toBe("out_of_range");
  });

  it("passes normalization errors and options through", () => {
    expect(codeOf(() => buildIdentity({ str: "a/b" }))).toBe("invalid_char");
    expect(codeOf(() => buildIdentity({ str: "abc" }, { maxLength: 2 }))).toBe("too_long");
    expect(buildIdentity({ str: "Café" }, { unicode: true })).toEqual({
      kind: "string",
      id: "café",
    });
  });

  it("round-trips any u64", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: U64_MAX }), (n) => {
        const identity = buildIdentity({ numeric: n });
        expect(identity).toEqual({ kind: "numeric", id: n.toString(), numeric: n });
        expect(parsePathSegment(identity.id)).toEqual(identity);
      }),
    );
  });
});

describe("parsePathSegment", () => {
  it("reads digit segments that fit u64 as numeric, dropping leading zeros", () => {
    expect(parsePathSegment("042")).toEqual({ kind: "numeric", id: "42", numeric: 42n });
    expect(parsePathSegment("42")).toEqual({ kind: "numeric", id: "42", numeric: 42n });
    expect(parsePathSegment("0")).toEqual({ kind: "numeric", id: "0", numeric: 0n });
    expect(parsePathSegment("000")).toEqual({ kind: "numeric", id: "0", numeric: 0n });
    expect(parsePathSegment("18446744073709551615")).toEqual({
      kind: "numeric",
      id: "18446744073709551615",
      numeric: U64_MAX,
    });
    expect(parsePathSegment(`${"0".repeat(200)}7`)).toEqual({
      kind: "numeric",
      id: "7",
      numeric: 7n,
    });
  });

  it("reads anything else as a normalized string id", () => {
    expect(parsePathSegment("18446744073709551616")).toEqual({
      kind: "string",
      id: "18446744073709551616",
    });
    expect(parsePathSegment("99999999999999999999999")).toEqual({
      kind: "string",
      id: "99999999999999999999999",
    });
    expect(parsePathSegment("User-123")).toEqual({ kind: "string", id: "user-123" });
    expect(parsePathSegment("12a")).toEqual({ kind: "string", id: "12a" });
    expect(parsePathSegment("-1")).toEqual({ kind: "string", id: "-1" });
  });

  it("rejects what normalization rejects", () => {
    expect(codeOf(() => parsePathSegment(""))).toBe("empty");
    expect(codeOf(() => parsePathSegment("+1"))).toBe("invalid_char");
    expect(codeOf(() => parsePathSegment("a b"))).toBe("invalid_char");
    expect(parsePathSegment("A#b", { unicode: true, maxLength: 3 }).id).toBe("a#b");
    expect(codeOf(() => parsePathSegment("abcd", { maxLength: 3 }))).toBe("too_long");
  });
});

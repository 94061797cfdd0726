import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isCanonicalU32 } from "./canonical-decimal.js";
import { canonicalEntryKey } from "./entry-key.js";
import { type IdErrorCode, isIdError } from "./id-error.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

describe("isCanonicalU32", () => {
  it("accepts 0 and [1-9][0-9]* up to 4294967295", () => {
    for (const s of ["0", "1", "42", "4294967295", "1000000000", "999999999"]) {
      expect(isCanonicalU32(s), s).toBe(true);
    }
    for (const s of [
      "",
      "007",
      "00",
      "-1",
      "+1",
      "1.0",
      "4294967296",
      "9999999999",
      "10000000000",
      "1e3",
      " 1",
      "١",
    ]) {
      expect(isCanonicalU32(s), s).toBe(false);
    }
  });

  it("agrees with a BigInt model on every digit string", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."0123456789"), maxLength: 12 }), (s) => {
        const model = /^(0|[1-9][0-9]*)$/.test(s) && BigInt(s) <= 4294967295n;
        expect(isCanonicalU32(s)).toBe(model);
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4294967295 }), (n) => {
        expect(isCanonicalU32(String(n))).toBe(true);
      }),
    );
  });
});

describe("canonicalEntryKey", () => {
  it("normalizes string keys", () => {
    expect(canonicalEntryKey({ keyStr: "Email" })).toEqual({ kind: "string", key: "email" });
  });

  it("folds canonical u32 strings onto numeric keys", () => {
    expect(canonicalEntryKey({ keyStr: "42" })).toEqual({
      kind: "numeric",
      key: "42",
      numeric: 42,
    });
    expect(canonicalEntryKey({ keyStr: "0" })).toEqual({ kind: "numeric", key: "0", numeric: 0 });
    expect(canonicalEntryKey({ keyStr: "4294967295" })).toEqual({
      kind: "numeric",
      key: "4294967295",
      numeric: 4294967295,
    });
    expect(canonicalEntryKey({ keyStr: "007" })).toEqual({ kind: "string", key: "007" });
    expect(canonicalEntryKey({ keyStr: "4294967296" })).toEqual({
      kind: "string",
      key: "4294967296",
    });
  });

  it("gives numeric keys their decimal storage string, 0 included", () => {
    expect(canonicalEntryKey({ key: 42 })).toEqual({ kind: "numeric", key: "42", numeric: 42 });
    expect(canonicalEntryKey({ key: 0 })).toEqual({ kind: "numeric", key: "0", numeric: 0 });
    expect(canonicalEntryKey({ key: 0, keyStr: "" })).toEqual({
      kind: "numeric",
      key: "0",
      numeric: 0,
    });
  });

  it("requires exactly one form", () => {
    expect(codeOf(() => canonicalEntryKey({ key: 1, keyStr: "a" }))).toBe("both_provided");
    expect(codeOf(() => canonicalEntryKey({}))).toBe("none_provided");
    expect(codeOf(() => canonicalEntryKey({ keyStr: "" }))).toBe("none_provided");
    // key 0 is the proto3 default, so it counts as absent next to a string key.
    expect(canonicalEntryKey({ key: 0, keyStr: "Name" })).toEqual({ kind: "string", key: "name" });
  });

  it("rejects numeric keys outside u32", () => {
    for (const k of [-1, 1.5, 4294967296, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(
        codeOf(() => canonicalEntryKey({ key: k })),
        String(k),
      ).toBe("out_of_range");
    }
  });

  it("passes normalization errors and options through", () => {
    expect(codeOf(() => canonicalEntryKey({ keyStr: "a b" }))).toBe("invalid_char");
    expect(codeOf(() => canonicalEntryKey({ keyStr: "abc" }, { maxLength: 2 }))).toBe("too_long");
    expect(canonicalEntryKey({ keyStr: "Größe" }, { unicode: true })).toEqual({
      kind: "string",
      key: "größe",
    });
  });

  it('maps numeric N and string "N" to the same entry', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4294967295 }), (n) => {
        expect(canonicalEntryKey({ keyStr: String(n) })).toEqual(canonicalEntryKey({ key: n }));
      }),
    );
  });
});

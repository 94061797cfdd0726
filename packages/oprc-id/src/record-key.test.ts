import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type IdErrorCode, isIdError } from "./id-error.js";
import { isValidRecordKey, RECORD_KEY_MAX_LENGTH, validateRecordKey } from "./record-key.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

// Seed 004, "Examples".
const SEED_VALID = ["1a2b3c", "self", "example.net", "~1.2-3_", "rDg8fH", "prefix:suffix", "_"];
const SEED_INVALID = [
  "alpha/beta",
  ".",
  "..",
  "#extra",
  "any space",
  "any+space",
  "number[3]",
  "number(3)",
  '"quote"',
  "dHJ1ZQ==",
];

describe("isValidRecordKey", () => {
  it("accepts every valid example of seed 004", () => {
    for (const k of SEED_VALID) {
      expect(isValidRecordKey(k), k).toBe(true);
      expect(validateRecordKey(k, "any")).toBe(k);
    }
  });

  it("rejects every invalid example of seed 004", () => {
    for (const k of SEED_INVALID) {
      expect(isValidRecordKey(k), k).toBe(false);
      expect(
        codeOf(() => validateRecordKey(k, "any")),
        k,
      ).toBe("invalid_record_key");
    }
  });

  it("enforces 1..512 characters", () => {
    expect(RECORD_KEY_MAX_LENGTH).toBe(512);
    expect(isValidRecordKey("")).toBe(false);
    expect(isValidRecordKey("a".repeat(512))).toBe(true);
    expect(isValidRecordKey("a".repeat(513))).toBe(false);
    expect(isValidRecordKey("...")).toBe(true);
    expect(isValidRecordKey("é")).toBe(false);
  });

  it("is case-sensitive and does not normalize", () => {
    expect(validateRecordKey("rDg8fH", "any")).toBe("rDg8fH");
    expect(codeOf(() => validateRecordKey("Self", { literal: "self" }))).toBe("invalid_record_key");
  });

  it("agrees with a regex model", () => {
    const model = (s: string): boolean =>
      /^[A-Za-z0-9.\-_:~]{1,512}$/.test(s) && s !== "." && s !== "..";
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(..."aZ09.-_:~/#+ é\u0000"), maxLength: 8 }),
        (s) => {
          expect(isValidRecordKey(s)).toBe(model(s));
        },
      ),
    );
  });
});

describe("validateRecordKey", () => {
  it("checks the tid type", () => {
    expect(validateRecordKey("3jzfcijpj2z2a", "tid")).toBe("3jzfcijpj2z2a");
    expect(codeOf(() => validateRecordKey("self", "tid"))).toBe("invalid_record_key");
    expect(codeOf(() => validateRecordKey("3jzfcijpj2z2A", "tid"))).toBe("invalid_record_key");
  });

  it("checks literal types", () => {
    expect(validateRecordKey("self", { literal: "self" })).toBe("self");
    expect(codeOf(() => validateRecordKey("other", { literal: "self" }))).toBe(
      "invalid_record_key",
    );
  });

  it("explains the failure", () => {
    const message = (fn: () => unknown): string => {
      try {
        fn();
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    expect(message(() => validateRecordKey("alpha/beta", "any"))).toBe(
      '[invalid_record_key] record key has invalid character "/" at index 5; allowed: A-Z a-z 0-9 . - _ : ~',
    );
    expect(message(() => validateRecordKey("..", "any"))).toBe(
      '[invalid_record_key] record key ".." is not allowed',
    );
    expect(message(() => validateRecordKey("", "any"))).toBe(
      "[invalid_record_key] record key is empty",
    );
    expect(message(() => validateRecordKey("a".repeat(513), "any"))).toContain(
      "513 characters long; the maximum is 512",
    );
    expect(message(() => validateRecordKey("x", { literal: "self" }))).toContain(
      'must be the literal "self"',
    );
  });

  it("rejects an unknown type", () => {
    expect(codeOf(() => validateRecordKey("a", "nsid" as "any"))).toBe("invalid_record_key");
  });
});

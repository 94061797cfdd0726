import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type IdErrorCode, isIdError } from "./id-error.js";
import {
  DEFAULT_MAX_ID_LENGTH,
  type NormalizeOptions,
  normalizeEntryKey,
  normalizeObjectId,
} from "./normalize-id.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a throw");
}

// Independent reference models of the two modes, written with regexes and Buffer.
const STRICT_OK = /^[a-z0-9._:-]*$/;
function strictModel(raw: string, max: number): Outcome {
  if (raw.length === 0) return { err: "empty" };
  const lowered = raw.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (Buffer.byteLength(lowered, "utf8") > max) return { err: "too_long" };
  if (!STRICT_OK.test(lowered)) return { err: "invalid_char" };
  return { ok: lowered };
}

const UNICODE_BAD = /[\p{Cc}\p{White_Space}/]|\p{Surrogate}/u;
function unicodeModel(raw: string, max: number): Outcome {
  if (raw.length === 0) return { err: "empty" };
  const s = raw
    .normalize("NFC")
    .replace(/[A-Z]/g, (c) => c.toLowerCase())
    .normalize("NFC");
  if (Buffer.byteLength(s, "utf8") > max) return { err: "too_long" };
  if (UNICODE_BAD.test(s)) return { err: "invalid_char" };
  return { ok: s };
}

type Outcome = { ok: string } | { err: IdErrorCode };
function run(raw: string, options: NormalizeOptions): Outcome {
  try {
    return { ok: normalizeObjectId(raw, options) };
  } catch (err) {
    if (isIdError(err)) return { err: err.code };
    throw err;
  }
}

// Arbitraries: ids drawn mostly from the interesting characters, plus anything at all.
const idChar = fc.constantFrom(..."abcxyzABCXYZ0189._:-");
const oddChar = fc.constantFrom(
  ..."/ \t\n\u0000\u007f\u0085\u00a0\u2028\u3000#%?é\u00c9\u0301\u212a\u030aW\ud800\udc00",
  "\u{1f600}",
  "\u1100\u1161\u11a8", // Hangul jamo that NFC composes into one syllable
);
const anyUnit = fc.oneof(
  { weight: 6, arbitrary: idChar },
  { weight: 2, arbitrary: oddChar },
  { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
);
const rawId = fc.string({ unit: anyUnit, maxLength: 60 });
const maxLength = fc.integer({ min: 1, max: 48 });

describe("normalizeObjectId (strict)", () => {
  it("lowercases ASCII and keeps valid ids (seed 001)", () => {
    expect(normalizeObjectId("User-123")).toBe("user-123");
    expect(normalizeObjectId("user-123")).toBe("user-123");
    expect(normalizeObjectId("A.B_C:D-E")).toBe("a.b_c:d-e");
    expect(normalizeObjectId("42")).toBe("42");
    expect(normalizeEntryKey("Email")).toBe("email");
  });

  it("returns the very same string when nothing changes", () => {
    const s = "order-000123";
    expect(normalizeObjectId(s)).toBe(s);
  });

  it("rejects empty ids", () => {
    expect(codeOf(() => normalizeObjectId(""))).toBe("empty");
    expect(errorOf(() => normalizeEntryKey("")).message).toBe("[empty] entry key is empty");
  });

  it("applies the byte-length maximum (default 160)", () => {
    expect(DEFAULT_MAX_ID_LENGTH).toBe(160);
    expect(normalizeObjectId("a".repeat(160))).toBe("a".repeat(160));
    expect(errorOf(() => normalizeObjectId("a".repeat(161))).message).toBe(
      "[too_long] object id is 161 bytes long; the maximum is 160",
    );
    expect(normalizeObjectId("abcd", { maxLength: 4 })).toBe("abcd");
    expect(codeOf(() => normalizeObjectId("abcde", { maxLength: 4 }))).toBe("too_long");
    // Multi-byte characters count in bytes even though they are invalid in strict mode.
    expect(errorOf(() => normalizeObjectId("é".repeat(3), { maxLength: 5 })).message).toBe(
      "[too_long] object id is 6 bytes long; the maximum is 5",
    );
  });

  it("names the invalid character and its index", () => {
    expect(errorOf(() => normalizeObjectId("user/1")).message).toBe(
      '[invalid_char] object id has invalid character "/" (U+002F) at index 4; allowed: a-z 0-9 . _ : -',
    );
    expect(errorOf(() => normalizeEntryKey("a b")).message).toContain(
      'entry key has invalid character " " (U+0020) at index 1',
    );
    expect(errorOf(() => normalizeObjectId("x\u{1f600}")).message).toContain(
      '"\u{1f600}" (U+1F600) at index 1',
    );
    expect(errorOf(() => normalizeObjectId("ab\u0000")).message).toContain(
      '"\\u0000" (U+0000) at index 2',
    );
    for (const bad of ["café", "a+b", "a@b", "%41", "a~b", "ẞ", "\u212A"]) {
      expect(
        codeOf(() => normalizeObjectId(bad)),
        bad,
      ).toBe("invalid_char");
    }
  });

  it("rejects a non-string input from untyped callers", () => {
    expect(codeOf(() => normalizeObjectId(42 as unknown as string))).toBe("invalid_char");
  });

  it("rejects an invalid maxLength", () => {
    for (const m of [0, -1, 1.5, Number.NaN]) {
      expect(codeOf(() => normalizeObjectId("a", { maxLength: m }))).toBe("out_of_range");
    }
  });

  it("matches the reference model", () => {
    fc.assert(
      fc.property(rawId, maxLength, (raw, max) => {
        expect(run(raw, { maxLength: max })).toEqual(strictModel(raw, max));
      }),
      { numRuns: 3000 },
    );
  });

  it("is idempotent and its output satisfies the rules", () => {
    fc.assert(
      fc.property(rawId, maxLength, (raw, max) => {
        const r = run(raw, { maxLength: max });
        if (!("ok" in r)) return;
        const out = r.ok;
        expect(normalizeObjectId(out, { maxLength: max })).toBe(out);
        expect(out).toMatch(/^[a-z0-9._:-]+$/);
        expect(out.length).toBeLessThanOrEqual(max);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("normalizeObjectId (unicode)", () => {
  const u = { unicode: true } as const;

  it("NFC-normalizes and lowercases ASCII only", () => {
    expect(normalizeObjectId("Café", u)).toBe("café");
    expect(normalizeObjectId("Cafe\u0301", u)).toBe("café");
    expect(normalizeObjectId("ÉCOLE", u)).toBe("École");
    expect(normalizeObjectId("ÄÖÜ-Straße", u)).toBe("ÄÖÜ-straße");
    expect(normalizeObjectId("User#1?%", u)).toBe("user#1?%");
    expect(normalizeObjectId("用户-1", u)).toBe("用户-1");
    expect(normalizeObjectId("\u{1f600}", u)).toBe("\u{1f600}");
  });

  it("stays idempotent where lowercasing enables a new composition", () => {
    // "W" + combining ring above does not compose, but "w" + ring composes to U+1E98.
    const once = normalizeObjectId("W\u030A", u);
    expect(once).toBe("\u1E98");
    expect(normalizeObjectId(once, u)).toBe(once);
    // KELVIN SIGN decomposes to ASCII "K" under NFC, which is then lowercased.
    expect(normalizeObjectId("\u212A", u)).toBe("k");
  });

  it("rejects control characters, whitespace, / and NUL", () => {
    for (const bad of [
      "a\u0000",
      "a\u0007",
      "a\u001f",
      "a\u007f",
      "a\u0080",
      "a\u0085",
      "a\u009f",
      "a b",
      "a\tb",
      "a\u00a0b",
      "a\u1680b",
      "a\u2003b",
      "a\u2028b",
      "a\u3000b",
      "a/b",
      "é/",
      "a\ud800",
      "\udc00a",
    ]) {
      expect(
        codeOf(() => normalizeObjectId(bad, u)),
        JSON.stringify(bad),
      ).toBe("invalid_char");
    }
    expect(errorOf(() => normalizeObjectId("Aé\u0085", u)).message).toContain(
      '"\u0085" (U+0085) at index 2',
    );
  });

  it("counts the length in UTF-8 bytes", () => {
    expect(normalizeObjectId("é".repeat(80), u)).toBe("é".repeat(80)); // 160 bytes
    expect(errorOf(() => normalizeObjectId("é".repeat(81), u)).message).toBe(
      "[too_long] object id is 162 bytes long; the maximum is 160",
    );
    expect(codeOf(() => normalizeObjectId("\u{1f600}", { unicode: true, maxLength: 3 }))).toBe(
      "too_long",
    );
    expect(normalizeObjectId("\u{1f600}", { unicode: true, maxLength: 4 })).toBe("\u{1f600}");
    // NFC shrinks decomposed input before it is measured: e + U+0301 (3 bytes) → é (2 bytes).
    expect(normalizeObjectId("e\u0301", { unicode: true, maxLength: 2 })).toBe("é");
    expect(codeOf(() => normalizeObjectId("", u))).toBe("empty");
  });

  it("matches the reference model, including byte limits on multi-byte input", () => {
    fc.assert(
      fc.property(rawId, maxLength, (raw, max) => {
        expect(run(raw, { unicode: true, maxLength: max })).toEqual(unicodeModel(raw, max));
      }),
      { numRuns: 3000 },
    );
  });

  it("is idempotent and its output satisfies the rules", () => {
    fc.assert(
      fc.property(rawId, fc.integer({ min: 1, max: 200 }), (raw, max) => {
        const options = { unicode: true, maxLength: max };
        const r = run(raw, options);
        if (!("ok" in r)) return;
        const out = r.ok;
        expect(normalizeObjectId(out, options)).toBe(out);
        expect(out.length).toBeGreaterThan(0);
        expect(out.normalize("NFC")).toBe(out);
        expect(/[A-Z]/.test(out)).toBe(false);
        expect(UNICODE_BAD.test(out)).toBe(false);
        expect(Buffer.byteLength(out, "utf8")).toBeLessThanOrEqual(max);
      }),
      { numRuns: 3000 },
    );
  });
});

// Shared fast-check arbitraries for the granular-key suites.
import fc from "fast-check";

const isWellFormed = (s: string): boolean =>
  (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** Any string the layout accepts as an id: non-empty, no U+0000, no lone surrogate. */
export const anyId: fc.Arbitrary<string> = fc
  .string({ unit: "binary", minLength: 1, maxLength: 40 })
  .filter((s) => !s.includes("\0") && isWellFormed(s));

/** Ids over a tiny alphabet, so that one id is often a prefix of another. */
export const prefixyId: fc.Arbitrary<string> = fc
  .array(fc.constantFrom("a", "b", "é", "\u{1f600}", "\u{7f}", "\u{1}"), {
    minLength: 1,
    maxLength: 5,
  })
  .map((parts) => parts.join(""));

/** Mixed id arbitrary: mostly prefix-heavy, sometimes anything. */
export const id: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: prefixyId, weight: 3 },
  { arbitrary: anyId, weight: 1 },
);

/** Any string entry key the layout accepts (may be empty, may hold U+0000). */
export const anyStrKey: fc.Arbitrary<string> = fc
  .string({ unit: "binary", maxLength: 40 })
  .filter(isWellFormed);

/** String entry keys over a tiny alphabet, so prefixes and equal lengths are common. */
export const prefixyStrKey: fc.Arbitrary<string> = fc
  .array(fc.constantFrom("a", "b", "1", "é", "\u{1f600}", "\0"), { maxLength: 6 })
  .map((parts) => parts.join(""));

export const strKey: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: prefixyStrKey, weight: 3 },
  { arbitrary: anyStrKey, weight: 1 },
);

/** A u32 numeric entry key, biased to edges and small decimal numbers. */
export const numericKey: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: 0, max: 0xffff_ffff }),
  fc.integer({ min: 0, max: 1000 }),
  fc.constantFrom(0, 1, 9, 10, 42, 99, 100, 429_496_729, 4_294_967_295),
);

export type EntryKey = { numeric: number } | { str: string };

export const entryKey: fc.Arbitrary<EntryKey> = fc.oneof(
  numericKey.map((numeric) => ({ numeric })),
  strKey.map((str) => ({ str })),
);

/** Lowercase hex of bytes, for readable golden comparisons. */
export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

const U32_MAX_STR = "4294967295";
const U64_MAX_STR = "18446744073709551615";

/** True when `s` is `"0"` or `[1-9][0-9]*` of at most `maxLen` digits that is ≤ `max`. */
function isCanonicalDecimal(s: string, maxLen: number, max: string): boolean {
  const n = s.length;
  if (n === 0 || n > maxLen) return false;
  const first = s.charCodeAt(0);
  if (first === 48) return n === 1;
  if (first < 49 || first > 57) return false;
  for (let i = 1; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return n < maxLen || s <= max;
}

/**
 * True when `s` is the canonical decimal form of a u32: `"0"` or `[1-9][0-9]*` up to
 * `"4294967295"`. `"007"`, `"+7"` and `"4294967296"` are not. This is the rule that makes an
 * entry key numeric (spec §2).
 */
export function isCanonicalU32(s: string): boolean {
  return isCanonicalDecimal(s, 10, U32_MAX_STR);
}

/**
 * True when `s` is the canonical decimal form of a u64: `"0"` or `[1-9][0-9]*` up to
 * `"18446744073709551615"`. This is the rule that makes a normalized object id numeric
 * (spec §2: numeric id N and string id `"N"` are one object).
 *
 * @example
 * ```ts
 * isCanonicalU64("42"); // true
 * isCanonicalU64("042"); // false: a string id
 * ```
 */
export function isCanonicalU64(s: string): boolean {
  return isCanonicalDecimal(s, 20, U64_MAX_STR);
}

/**
 * The u64 that `s` names in canonical decimal form, or `undefined` when `s` is not one
 * (see {@link isCanonicalU64}).
 *
 * @example
 * ```ts
 * parseCanonicalU64("18446744073709551615"); // 18446744073709551615n
 * parseCanonicalU64("user-1"); // undefined
 * ```
 */
export function parseCanonicalU64(s: string): bigint | undefined {
  return isCanonicalU64(s) ? BigInt(s) : undefined;
}

// Canonical decimal checks for entry keys (u32) and object ids (u64).
// Kept local (a few lines) so this package does not depend on the exact API of
// @oprc/oprc-id, which is written in parallel; the rule is the same as spec §2:
// "0" or [1-9][0-9]* and within range.

const U32_MAX = 4294967295;
const U64_MAX_STR = "18446744073709551615";

/** True when `s` is the canonical decimal form of a u32 (`"0"` or `[1-9][0-9]*` ≤ 4294967295). */
export function isCanonicalU32(s: string): boolean {
  const n = s.length;
  if (n === 0 || n > 10) return false;
  const first = s.charCodeAt(0);
  if (first === 48) return n === 1;
  if (first < 49 || first > 57) return false;
  for (let i = 1; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return n < 10 || Number(s) <= U32_MAX;
}

/** True when `s` is the canonical decimal form of a u64 (`"0"` or `[1-9][0-9]*` ≤ 2^64-1). */
export function isCanonicalU64(s: string): boolean {
  const n = s.length;
  if (n === 0 || n > 20) return false;
  const first = s.charCodeAt(0);
  if (first === 48) return n === 1;
  if (first < 49 || first > 57) return false;
  for (let i = 1; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return n < 20 || s <= U64_MAX_STR;
}

// Canonical decimal check for object ids (u64), used to fill EventInfo.source_object_id.
// @oprc/oprc-id exports the u32 rule (isCanonicalU32, re-exported here so the package
// has one import site) but no u64 form; the rule is the same as spec §2:
// "0" or [1-9][0-9]* and within range.
export { isCanonicalU32 } from "@oprc/oprc-id";

const U64_MAX_STR = "18446744073709551615";
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

import { alloc } from "./byte-pool.js";
import { KeyError } from "./key-error.js";
import { encodeRecordKey, MAX_NUMERIC_ENTRY_KEY } from "./object-key.js";
import { RecordType } from "./record-type.js";
import { idByteLength, strByteLength, writeStr } from "./utf8.js";
import { varintLength, writeVarint } from "./varint.js";

/**
 * A half-open byte range of keys: every key `k` with `gte <= k < lt` in bytewise order
 * (the order RocksDB's default comparator and {@link compareKeys} use).
 */
export interface KeyRange {
  /** Inclusive lower bound. */
  readonly gte: Uint8Array;
  /** Exclusive upper bound. */
  readonly lt: Uint8Array;
}

/**
 * Default for {@link EntryRangeOptions.maxKeyLength}: 160 bytes, the default
 * `ODGM_MAX_STRING_ID_LEN`, which also bounds entry keys (spec §2).
 */
export const DEFAULT_MAX_KEY_LENGTH = 160;

/** Lower bound of all object keys: valid keys start with a non-zero byte. */
const OBJECTS_GTE = Uint8Array.of(0x01);
/** Upper bound of all object keys: no UTF-8 string starts with a byte of 0xf5 or above. */
const OBJECTS_LT = Uint8Array.of(0xf5);

/**
 * Compares two keys bytewise (unsigned, shorter-is-smaller on a common prefix): negative,
 * zero or positive, like `Buffer.compare`. This is storage order.
 */
export function compareKeys(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** True when `range.gte <= key < range.lt`. */
export function keyInRange(key: Uint8Array, range: KeyRange): boolean {
  return compareKeys(key, range.gte) >= 0 && compareKeys(key, range.lt) < 0;
}

/**
 * The prefix shared by every key of one object: `<id> 00`. It sorts before all of them.
 */
export function objectPrefix(id: string): Uint8Array {
  const n = idByteLength(id);
  const out = alloc(n + 1);
  writeStr(id, out, 0, n);
  out[n] = 0x00;
  return out;
}

/**
 * Every key of one object and nothing else: `{ gte: <id> 00, lt: <id> 01 }`. Because ids
 * never contain `0x00`, an object whose id extends this one (`"ab"` vs `"a"`) has
 * `'b'` (≥ 0x01) where this one has its terminator, so it falls outside the range.
 */
export function objectRange(id: string): KeyRange {
  const gte = objectPrefix(id);
  const lt = alloc(gte.length);
  lt.set(gte);
  lt[gte.length - 1] = 0x01;
  return { gte, lt };
}

/** Options of {@link entryRange}. */
export interface EntryRangeOptions {
  /**
   * Only entries whose key starts with this string. Default: none (every entry). `""`
   * means none too.
   */
  readonly stringPrefix?: string;
  /**
   * Whether numeric entries whose canonical decimal form starts with `stringPrefix` are
   * included. Default `true`: numeric key 42 and string key `"42"` are one entry (spec
   * §2), so prefix `"4"` matches numeric 4, 40–49, 400–499, … Pass `false` to list
   * string-keyed entries only. Ignored without `stringPrefix`.
   */
  readonly numeric?: boolean;
  /**
   * Longest string entry key, in UTF-8 bytes, that the prefix ranges cover. Default
   * {@link DEFAULT_MAX_KEY_LENGTH} (160). Pass the configured maximum entry-key length:
   * longer keys cannot be written (normalization rejects them), so none are missed.
   */
  readonly maxKeyLength?: number;
}

/**
 * The key ranges holding an object's entries, sorted in storage order and disjoint.
 *
 * Without a prefix this is one range, `<id> 00 10` up to `<id> 00 12` (numeric entries in
 * numeric order, then string entries by (byte length, bytes)).
 *
 * With `stringPrefix` (UTF-8 bytes `p`, length `m`), string entries are ordered
 * length-first, so the keys starting with `p` are not contiguous. They are contiguous per
 * length, though: every key of length `L` starting with `p` lies in
 * `[<id> 00 11 varint(L) p, successor)`. The result holds one such range per length
 * `L = m … maxKeyLength` (after up to 10 numeric ranges, see
 * {@link EntryRangeOptions.numeric}), so scanning them in order returns exactly the
 * matching keys, in storage order. Most ranges are usually empty: scan them with one
 * iterator and {@link findRange} to seek past empty lengths in one step.
 *
 * @example
 * ```ts
 * for (const { gte, lt } of entryRange("user-123", { stringPrefix: "na" })) {
 *   // db.iterator({ gte, lt }) …
 * }
 * ```
 */
export function entryRange(id: string, options?: EntryRangeOptions): KeyRange[] {
  const prefix = options?.stringPrefix;
  if (prefix === undefined || prefix === "") {
    return [
      {
        gte: encodeRecordKey(id, RecordType.NumericEntry),
        lt: encodeRecordKey(id, RecordType.StringEntry + 1),
      },
    ];
  }
  const maxKeyLength = options?.maxKeyLength ?? DEFAULT_MAX_KEY_LENGTH;
  if (!Number.isSafeInteger(maxKeyLength) || maxKeyLength < 0) {
    throw new KeyError("out_of_range", `maxKeyLength must be a non-negative safe integer`);
  }
  const n = idByteLength(id);
  const m = strByteLength(prefix, "string prefix");
  const ranges: KeyRange[] = [];
  if (options?.numeric !== false) numericPrefixRanges(id, n, prefix, ranges);
  for (let length = m; length <= maxKeyLength; length++) {
    const v = varintLength(length);
    const size = n + 2 + v + m;
    const gte = alloc(size);
    writeStr(id, gte, 0, n);
    gte[n] = 0x00;
    gte[n + 1] = RecordType.StringEntry;
    writeVarint(gte, n + 2, length);
    writeStr(prefix, gte, n + 2 + v, m);
    ranges.push({ gte, lt: successor(gte) });
  }
  return ranges;
}

/** Ranges of numeric entries whose canonical decimal form starts with `prefix`. */
function numericPrefixRanges(id: string, n: number, prefix: string, out: KeyRange[]): void {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(prefix)) return;
  const p = Number(prefix);
  if (p > MAX_NUMERIC_ENTRY_KEY) return;
  if (p === 0) {
    out.push({ gte: numericKey(id, n, 0), lt: numericKey(id, n, 1) });
    return;
  }
  for (let scale = 1; p * scale <= MAX_NUMERIC_ENTRY_KEY; scale *= 10) {
    const hi = (p + 1) * scale;
    out.push({
      gte: numericKey(id, n, p * scale),
      lt:
        hi > MAX_NUMERIC_ENTRY_KEY
          ? encodeRecordKey(id, RecordType.StringEntry)
          : numericKey(id, n, hi),
    });
  }
}

function numericKey(id: string, n: number, value: number): Uint8Array {
  const out = alloc(n + 6);
  writeStr(id, out, 0, n);
  out[n] = 0x00;
  out[n + 1] = RecordType.NumericEntry;
  out[n + 2] = value >>> 24;
  out[n + 3] = (value >>> 16) & 0xff;
  out[n + 4] = (value >>> 8) & 0xff;
  out[n + 5] = value & 0xff;
  return out;
}

/** The smallest key greater than every key starting with `bytes` (none ends in 0xff here). */
function successor(bytes: Uint8Array): Uint8Array {
  let i = bytes.length - 1;
  while (i >= 0 && bytes[i] === 0xff) i--;
  const out = alloc(i + 1);
  out.set(bytes.subarray(0, i + 1));
  out[i] = (out[i] as number) + 1;
  return out;
}

/** Options of {@link objectsRange}. */
export interface ObjectsRangeOptions {
  /** Only objects whose id starts with this string. Default: none (every object). */
  readonly idPrefix?: string;
}

/**
 * The key range holding every object whose id starts with `idPrefix` (ListObjects).
 *
 * The range holds all keys of those objects, not only their metadata: for each object the
 * metadata key `<id> 00 00` comes first, then its other records. Read the metadata key,
 * then seek to {@link afterObject} of it to skip the object's entries. Without a prefix
 * the range is `[01, f5)`: object keys never start with `0x00` (that space is free for
 * system records) nor with a byte that cannot start UTF-8.
 *
 * @example
 * ```ts
 * const { gte, lt } = objectsRange({ idPrefix: "user-" });
 * ```
 */
export function objectsRange(options?: ObjectsRangeOptions): KeyRange {
  const prefix = options?.idPrefix;
  if (prefix === undefined || prefix === "") return { gte: OBJECTS_GTE, lt: OBJECTS_LT };
  const n = idByteLength(prefix, "object id prefix");
  const gte = alloc(n);
  writeStr(prefix, gte, 0, n);
  return { gte, lt: successor(gte) };
}

/**
 * Given any key of an object, the smallest key after all of that object's keys:
 * `<id> 01`. Seek there to skip an object's entries while listing objects.
 */
export function afterObject(key: Uint8Array): Uint8Array {
  if (!(key instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "key must be a Uint8Array");
  }
  const nul = key.indexOf(0);
  if (nul === -1) throw new KeyError("truncated", "key has no 0x00 id terminator");
  if (nul === 0) throw new KeyError("empty_id", "key starts with 0x00 (system key space)");
  const out = alloc(nul + 1);
  out.set(key.subarray(0, nul));
  out[nul] = 0x01;
  return out;
}

/**
 * Index of the first range in `ranges` (sorted, disjoint, as {@link entryRange} returns)
 * whose `lt` is greater than `key`, or `ranges.length` if none. If `key >= ranges[i].gte`
 * the key is inside range `i`; otherwise `ranges[i].gte` is the next place to seek. Binary
 * search, so a single iterator can skip any number of empty ranges in one seek.
 */
export function findRange(ranges: readonly KeyRange[], key: Uint8Array): number {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys((ranges[mid] as KeyRange).lt, key) > 0) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The part of `ranges` (sorted, disjoint) strictly after `lastKey`: ranges that end at or
 * before it are dropped, a range containing it starts just after it. Use it to resume a
 * listing from a cursor's last key.
 */
export function rangesAfter(ranges: readonly KeyRange[], lastKey: Uint8Array): KeyRange[] {
  const next = alloc(lastKey.length + 1);
  next.set(lastKey);
  next[lastKey.length] = 0x00;
  const out: KeyRange[] = [];
  for (const range of ranges) {
    if (compareKeys(range.lt, next) <= 0) continue;
    out.push(compareKeys(range.gte, next) < 0 ? { gte: next, lt: range.lt } : range);
  }
  return out;
}

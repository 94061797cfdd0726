import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryKey, hex, id, prefixyId, prefixyStrKey, strKey, utf8 } from "../test/arbitraries.js";
import { hexList, SortedStore } from "../test/sorted-store.js";
import { decodeKey } from "./decode-key.js";
import { isKeyError } from "./key-error.js";
import {
  afterObject,
  compareKeys,
  entryRange,
  findRange,
  keyInRange,
  objectPrefix,
  objectRange,
  objectsRange,
  rangesAfter,
} from "./key-range.js";
import { encodeEntryKey, encodeEventConfigKey, encodeMetadataKey } from "./object-key.js";

type EntryKey = { numeric: number } | { str: string };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!isKeyError(err)) throw err;
    return err.code;
  }
}

/** Logical order of an object's records: metadata, event config, numeric, string. */
function logicalCompare(a: EntryKey | "meta" | "event", b: EntryKey | "meta" | "event"): number {
  const rank = (k: typeof a): number =>
    k === "meta" ? 0 : k === "event" ? 1 : "numeric" in k ? 2 : 3;
  const d = rank(a) - rank(b);
  if (d !== 0) return d;
  if (typeof a === "string" || typeof b === "string") return 0;
  if ("numeric" in a && "numeric" in b) return a.numeric - b.numeric;
  if ("str" in a && "str" in b) {
    const ua = utf8(a.str);
    const ub = utf8(b.str);
    return ua.length !== ub.length ? ua.length - ub.length : compareKeys(ua, ub);
  }
  return 0;
}

const matchesPrefix = (key: EntryKey, prefix: string, numeric = true): boolean =>
  "str" in key ? key.str.startsWith(prefix) : numeric && String(key.numeric).startsWith(prefix);

describe("compareKeys", () => {
  it("is bytewise order, like Buffer.compare", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 6 }), fc.uint8Array({ maxLength: 6 }), (a, b) => {
        expect(compareKeys(a, b)).toBe(Buffer.compare(a, b));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("order within an object", () => {
  it("metadata < event config < numeric (numeric order) < string (length, bytes)", () => {
    fc.assert(
      fc.property(id, fc.array(entryKey, { maxLength: 30 }), (objectId, keys) => {
        const records: (EntryKey | "meta" | "event")[] = ["meta", "event", ...keys];
        const encode = (r: (typeof records)[number]): Uint8Array =>
          r === "meta"
            ? encodeMetadataKey(objectId)
            : r === "event"
              ? encodeEventConfigKey(objectId)
              : encodeEntryKey(objectId, r);
        const byBytes = [...records].sort((a, b) => compareKeys(encode(a), encode(b)));
        const byLogic = [...records].sort(logicalCompare);
        expect(byBytes.map((r) => hex(encode(r)))).toEqual(byLogic.map((r) => hex(encode(r))));
      }),
      { numRuns: 500 },
    );
  });
});

describe("objectRange", () => {
  it("is <id> 00 .. <id> 01", () => {
    const { gte, lt } = objectRange("user-123");
    expect(hex(gte)).toBe("757365722d31323300");
    expect(hex(lt)).toBe("757365722d31323301");
    expect(hex(objectPrefix("a"))).toBe("6100");
  });

  it("holds every key of its object and none of another, also for prefix ids", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(prefixyId, { minLength: 2, maxLength: 6 }),
        fc.array(entryKey, { maxLength: 6 }),
        (ids, keys) => {
          for (const owner of ids) {
            const own = [
              encodeMetadataKey(owner),
              encodeEventConfigKey(owner),
              ...keys.map((k) => encodeEntryKey(owner, k)),
            ];
            for (const other of ids) {
              const range = objectRange(other);
              for (const key of own) expect(keyInRange(key, range)).toBe(other === owner);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('separates "a" from "ab" explicitly', () => {
    const a = objectRange("a");
    for (const key of [encodeMetadataKey("ab"), encodeEntryKey("ab", { str: "" })]) {
      expect(keyInRange(key, a)).toBe(false);
    }
    expect(keyInRange(encodeEntryKey("a", { str: "b".repeat(300) }), a)).toBe(true);
  });
});

describe("entryRange", () => {
  it("without a prefix is every entry and nothing else", () => {
    const [range, ...rest] = entryRange("a");
    expect(rest).toEqual([]);
    expect(hex(range?.gte ?? new Uint8Array())).toBe("610010");
    expect(hex(range?.lt ?? new Uint8Array())).toBe("610012");
    expect(entryRange("a", { stringPrefix: "" })).toHaveLength(1);
  });

  it("numeric prefix ranges are decimal-prefix intervals", () => {
    const ranges = entryRange("a", { stringPrefix: "42", maxKeyLength: 0 });
    const bounds = ranges.map((r) => [
      decodeKey(r.gte),
      r.lt.length === 3 ? "end" : decodeKey(r.lt),
    ]);
    expect(bounds.map(([g]) => (g as { key: { numeric: number } }).key.numeric)).toEqual([
      42, 420, 4200, 42000, 420000, 4200000, 42000000, 420000000, 4200000000,
    ]);
    expect(
      bounds.map(([, l]) => (l === "end" ? l : (l as { key: { numeric: number } }).key.numeric)),
    ).toEqual([43, 430, 4300, 43000, 430000, 4300000, 43000000, 430000000, "end"]);
    expect(hex(ranges.at(-1)?.lt ?? new Uint8Array())).toBe("610011");
    expect(entryRange("a", { stringPrefix: "0", maxKeyLength: 0 })).toHaveLength(1);
    expect(entryRange("a", { stringPrefix: "01", maxKeyLength: 0 })).toHaveLength(0);
    expect(entryRange("a", { stringPrefix: "4294967296", maxKeyLength: 0 })).toHaveLength(0);
    expect(entryRange("a", { stringPrefix: "x", maxKeyLength: 0 })).toHaveLength(0);
    expect(entryRange("a", { stringPrefix: "4", numeric: false, maxKeyLength: 3 })).toHaveLength(3);
  });

  it("returns exactly the entries with the prefix, in storage order (sorted-store simulation)", () => {
    const objects = fc.uniqueArray(
      fc.record({ id: prefixyId, keys: fc.array(entryKey, { maxLength: 25 }) }),
      { selector: (o) => o.id, minLength: 1, maxLength: 4 },
    );
    fc.assert(
      fc.property(
        objects,
        fc.oneof(prefixyStrKey, strKey, fc.constantFrom("1", "4", "42", "0", "429")),
        fc.boolean(),
        (objs, prefix, numeric) => {
          const store = new SortedStore(
            objs.flatMap((o) => [
              encodeMetadataKey(o.id),
              encodeEventConfigKey(o.id),
              ...o.keys.map((k) => encodeEntryKey(o.id, k)),
            ]),
          );
          for (const o of objs) {
            const ranges = entryRange(o.id, { stringPrefix: prefix, numeric });
            const expected = new SortedStore(
              o.keys
                .filter((k) => prefix === "" || matchesPrefix(k, prefix, numeric))
                .map((k) => encodeEntryKey(o.id, k)),
            ).keys;
            const got = store.scanAll(ranges);
            expect(hexList(got)).toEqual(hexList(expected));
            const skipped = store.skipScan(ranges);
            expect(hexList(skipped.keys)).toEqual(hexList(expected));
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it("ranges are sorted and disjoint", () => {
    fc.assert(
      fc.property(id, strKey, (objectId, prefix) => {
        const ranges = entryRange(objectId, { stringPrefix: prefix, maxKeyLength: 40 });
        for (const r of ranges) expect(compareKeys(r.gte, r.lt)).toBeLessThan(0);
        for (let i = 1; i < ranges.length; i++) {
          const prev = ranges[i - 1];
          const cur = ranges[i];
          if (prev && cur) expect(compareKeys(prev.lt, cur.gte)).toBeLessThanOrEqual(0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("with skip-scan, seeks scale with the lengths present, not with maxKeyLength", () => {
    const keys = ["name", "nameless", "nam", "other", "n"].map((str) =>
      encodeEntryKey("o", { str }),
    );
    const store = new SortedStore(keys);
    const ranges = entryRange("o", { stringPrefix: "nam", maxKeyLength: 1000 });
    const { keys: found, seeks } = store.skipScan(ranges);
    expect(found.map((k) => decodeKey(k))).toEqual(
      ["nam", "name", "nameless"].map((str) => ({ id: "o", record: "string_entry", key: { str } })),
    );
    expect(seeks).toBeLessThanOrEqual(6);
  });

  it("covers keys up to maxKeyLength bytes", () => {
    const long = `p${"x".repeat(199)}`;
    const store = new SortedStore([encodeEntryKey("o", { str: long })]);
    expect(store.scanAll(entryRange("o", { stringPrefix: "p" }))).toHaveLength(0);
    expect(store.scanAll(entryRange("o", { stringPrefix: "p", maxKeyLength: 200 }))).toHaveLength(
      1,
    );
    expect(codeOf(() => entryRange("o", { stringPrefix: "p", maxKeyLength: -1 }))).toBe(
      "out_of_range",
    );
  });
});

describe("objectsRange", () => {
  it("lists exactly the objects whose id has the prefix, in id byte order", () => {
    const objects = fc.uniqueArray(fc.record({ id, keys: fc.array(entryKey, { maxLength: 4 }) }), {
      selector: (o) => o.id,
      maxLength: 12,
    });
    fc.assert(
      fc.property(objects, fc.option(prefixyId, { nil: undefined }), (objs, idPrefix) => {
        const store = new SortedStore(
          objs.flatMap((o) => [
            encodeMetadataKey(o.id),
            encodeEventConfigKey(o.id),
            ...o.keys.map((k) => encodeEntryKey(o.id, k)),
          ]),
        );
        const range = objectsRange(idPrefix === undefined ? undefined : { idPrefix });
        // Skip-scan: read a metadata key, seek past the object.
        const listed: string[] = [];
        let pos = store.seek(range.gte);
        while (pos < store.keys.length) {
          const key = store.keys[pos] as Uint8Array;
          if (compareKeys(key, range.lt) >= 0) break;
          const decoded = decodeKey(key);
          if (decoded.record === "metadata") listed.push(decoded.id);
          pos = store.seek(afterObject(key));
        }
        // Plain scan with a filter gives the same.
        const filtered = store
          .scan(range)
          .map((k) => decodeKey(k))
          .filter((d) => d.record === "metadata")
          .map((d) => d.id);
        const expected = objs
          .map((o) => o.id)
          .filter((x) => idPrefix === undefined || x.startsWith(idPrefix))
          .sort((a, b) => compareKeys(utf8(a), utf8(b)));
        expect(listed).toEqual(expected);
        expect(filtered).toEqual(expected);
      }),
      { numRuns: 400 },
    );
  });

  it("spans every object key and no system key", () => {
    const all = objectsRange();
    expect(hex(all.gte)).toBe("01");
    expect(hex(all.lt)).toBe("f5");
    expect(keyInRange(Uint8Array.of(0, 1, 2), all)).toBe(false);
    fc.assert(
      fc.property(id, entryKey, (objectId, key) => {
        expect(keyInRange(encodeEntryKey(objectId, key), all)).toBe(true);
      }),
    );
    expect(hex(objectsRange({ idPrefix: "ab" }).lt)).toBe("6163");
    expect(codeOf(() => objectsRange({ idPrefix: "a\0" }))).toBe("nul_in_id");
  });

  it("afterObject is <id> 01 for any key of the object", () => {
    expect(hex(afterObject(encodeEntryKey("ab", { numeric: 5 })))).toBe("616201");
    expect(codeOf(() => afterObject(Uint8Array.of(0x61)))).toBe("truncated");
    expect(codeOf(() => afterObject(Uint8Array.of(0, 0)))).toBe("empty_id");
  });
});

describe("rangesAfter and findRange", () => {
  it("resume strictly after the last key", () => {
    fc.assert(
      fc.property(
        fc.array(entryKey, { maxLength: 30 }),
        fc.oneof(prefixyStrKey, fc.constant("")),
        fc.nat(),
        (keys, prefix, cut) => {
          const store = new SortedStore(keys.map((k) => encodeEntryKey("o", k)));
          const ranges = entryRange("o", { stringPrefix: prefix, maxKeyLength: 40 });
          const all = store.scanAll(ranges);
          if (all.length === 0) return;
          const index = cut % all.length;
          const rest = store.scanAll(rangesAfter(ranges, all[index] as Uint8Array));
          expect(hexList(rest)).toEqual(hexList(all.slice(index + 1)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("findRange returns the first range ending after the key", () => {
    const ranges = entryRange("o", { stringPrefix: "a", numeric: false, maxKeyLength: 5 });
    expect(findRange(ranges, encodeMetadataKey("o"))).toBe(0);
    expect(findRange(ranges, encodeEntryKey("o", { str: "aa" }))).toBe(1);
    expect(findRange(ranges, encodeEntryKey("o", { str: "ba" }))).toBe(2);
    expect(findRange(ranges, encodeEntryKey("o", { str: "zzzzz" }))).toBe(5);
    expect(findRange([], encodeMetadataKey("o"))).toBe(0);
  });
});

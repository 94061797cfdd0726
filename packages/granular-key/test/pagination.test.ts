// Cross-module suite: ListValues / ListObjects paging over a sorted store with cursors,
// the way the entry store uses this package.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  afterObject,
  compareKeys,
  decodeCursor,
  decodeKey,
  decodeListCursor,
  encodeCursor,
  encodeEntryKey,
  encodeListCursor,
  encodeMetadataKey,
  entryRange,
  findRange,
  type KeyRange,
  objectsRange,
  rangesAfter,
} from "../src/index.js";
import { entryKey, id, prefixyId, prefixyStrKey } from "./arbitraries.js";
import { hexList, SortedStore } from "./sorted-store.js";

/** One ListValues page: single iterator, skip-scan over the prefix ranges. */
function listValuesPage(
  store: SortedStore,
  objectId: string,
  prefix: string | undefined,
  limit: number,
  cursor: Uint8Array | undefined,
): { keys: Uint8Array[]; next: Uint8Array | undefined } {
  let ranges: KeyRange[] = entryRange(
    objectId,
    prefix === undefined ? undefined : { stringPrefix: prefix },
  );
  if (cursor !== undefined) ranges = rangesAfter(ranges, decodeCursor(objectId, cursor));
  const keys: Uint8Array[] = [];
  const first = ranges[0];
  if (first === undefined) return { keys, next: undefined };
  let pos = store.seek(first.gte);
  while (pos < store.keys.length) {
    const key = store.keys[pos] as Uint8Array;
    const range = ranges[findRange(ranges, key)];
    if (range === undefined) break;
    if (compareKeys(key, range.gte) < 0) {
      pos = store.seek(range.gte);
      continue;
    }
    if (keys.length === limit) {
      return { keys, next: encodeCursor(objectId, keys[keys.length - 1] as Uint8Array) };
    }
    keys.push(key);
    pos++;
  }
  return { keys, next: undefined };
}

/** One ListObjects page: metadata keys, skipping each object's other records. */
function listObjectsPage(
  store: SortedStore,
  idPrefix: string | undefined,
  limit: number,
  cursor: Uint8Array | undefined,
): { ids: string[]; next: Uint8Array | undefined } {
  const range = objectsRange(idPrefix === undefined ? undefined : { idPrefix });
  const start = cursor === undefined ? range.gte : afterObject(decodeListCursor(idPrefix, cursor));
  const ids: string[] = [];
  let last: Uint8Array | undefined;
  let pos = store.seek(start);
  while (pos < store.keys.length) {
    const key = store.keys[pos] as Uint8Array;
    if (compareKeys(key, range.lt) >= 0) break;
    const decoded = decodeKey(key);
    if (decoded.record === "metadata") {
      if (ids.length === limit && last !== undefined) {
        return { ids, next: encodeListCursor(idPrefix, last) };
      }
      ids.push(decoded.id);
      last = key;
    }
    pos = store.seek(afterObject(key));
  }
  return { ids, next: undefined };
}

describe("paging with cursors over a sorted store", () => {
  it("ListValues pages concatenate to the full prefix listing", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ id: prefixyId, keys: fc.array(entryKey, { maxLength: 30 }) }), {
          selector: (o) => o.id,
          minLength: 1,
          maxLength: 3,
        }),
        fc.option(fc.oneof(prefixyStrKey, fc.constantFrom("1", "a")), { nil: undefined }),
        fc.integer({ min: 1, max: 7 }),
        (objects, prefix, limit) => {
          const store = new SortedStore(
            objects.flatMap((o) => [
              encodeMetadataKey(o.id),
              ...o.keys.map((k) => encodeEntryKey(o.id, k)),
            ]),
          );
          for (const o of objects) {
            const full = store.scanAll(
              entryRange(o.id, prefix === undefined ? undefined : { stringPrefix: prefix }),
            );
            const paged: Uint8Array[] = [];
            let cursor: Uint8Array | undefined;
            let pages = 0;
            do {
              const page = listValuesPage(store, o.id, prefix, limit, cursor);
              paged.push(...page.keys);
              cursor = page.next;
              pages++;
              expect(pages).toBeLessThanOrEqual(full.length + 1);
            } while (cursor !== undefined);
            expect(hexList(paged)).toEqual(hexList(full));
            for (const k of paged) expect(decodeKey(k).id).toBe(o.id);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("ListObjects pages concatenate to every object with the prefix, in id byte order", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ id, keys: fc.array(entryKey, { maxLength: 3 }) }), {
          selector: (o) => o.id,
          maxLength: 15,
        }),
        fc.option(prefixyId, { nil: undefined }),
        fc.integer({ min: 1, max: 4 }),
        (objects, idPrefix, limit) => {
          const store = new SortedStore(
            objects.flatMap((o) => [
              encodeMetadataKey(o.id),
              ...o.keys.map((k) => encodeEntryKey(o.id, k)),
            ]),
          );
          const listed: string[] = [];
          let cursor: Uint8Array | undefined;
          do {
            const page = listObjectsPage(store, idPrefix, limit, cursor);
            expect(page.ids.length).toBeLessThanOrEqual(limit);
            listed.push(...page.ids);
            cursor = page.next;
          } while (cursor !== undefined);
          const enc = new TextEncoder();
          const expected = objects
            .map((o) => o.id)
            .filter((x) => idPrefix === undefined || x.startsWith(idPrefix))
            .sort((a, b) => compareKeys(enc.encode(a), enc.encode(b)));
          expect(listed).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});

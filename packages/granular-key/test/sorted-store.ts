// A sorted in-memory key store, standing in for RocksDB's ordered iteration in range tests.
import { compareKeys, findRange, type KeyRange } from "../src/index.js";

export class SortedStore {
  readonly keys: Uint8Array[];

  constructor(keys: Iterable<Uint8Array>) {
    const unique = new Map<string, Uint8Array>();
    for (const key of keys) unique.set(Buffer.from(key).toString("hex"), key.slice());
    this.keys = [...unique.values()].sort(compareKeys);
  }

  /** Index of the first key >= target (an iterator seek). */
  seek(target: Uint8Array): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.keys[mid] as Uint8Array, target) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** All keys in one range, in order. */
  scan(range: KeyRange): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let i = this.seek(range.gte); i < this.keys.length; i++) {
      const key = this.keys[i] as Uint8Array;
      if (compareKeys(key, range.lt) >= 0) break;
      out.push(key);
    }
    return out;
  }

  /** All keys in the ranges, scanning them one after the other (one iterator per range). */
  scanAll(ranges: readonly KeyRange[], limit: number = Number.POSITIVE_INFINITY): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const range of ranges) {
      for (const key of this.scan(range)) {
        if (out.length >= limit) return out;
        out.push(key);
      }
    }
    return out;
  }

  /** The same keys with one iterator that seeks over empty ranges via findRange. */
  skipScan(ranges: readonly KeyRange[]): { keys: Uint8Array[]; seeks: number } {
    const keys: Uint8Array[] = [];
    const first = ranges[0];
    if (first === undefined) return { keys, seeks: 0 };
    let seeks = 1;
    let pos = this.seek(first.gte);
    while (pos < this.keys.length) {
      const key = this.keys[pos] as Uint8Array;
      const index = findRange(ranges, key);
      const range = ranges[index];
      if (range === undefined) break;
      if (compareKeys(key, range.gte) >= 0) {
        keys.push(key);
        pos++;
      } else {
        pos = this.seek(range.gte);
        seeks++;
      }
    }
    return { keys, seeks };
  }
}

export function hexList(keys: readonly Uint8Array[]): string[] {
  return keys.map((k) => Buffer.from(k).toString("hex"));
}

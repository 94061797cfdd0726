import { compareBytes } from "./bytes.js";
import type {
  Keyspace,
  KvEngine,
  KvEntry,
  KvIterator,
  KvIteratorOptions,
  KvShard,
  KvWriteOp,
} from "./kv.js";
import { StoreError } from "./store-error.js";

const EMPTY = new Uint8Array(0);

/** A sorted map of byte strings with copy-on-write snapshots for iterators. */
class SortedMap {
  keys: Uint8Array[] = [];
  values: Uint8Array[] = [];
  /** Open iterators reading the current arrays: while any is open, a write copies them first. */
  readers = 0;

  /** Index of the first key ≥ `key`. */
  lowerBound(key: Uint8Array, keys: Uint8Array[] = this.keys): number {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(keys[mid] as Uint8Array, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    const i = this.lowerBound(key);
    const k = this.keys[i];
    return k !== undefined && compareBytes(k, key) === 0 ? this.values[i] : undefined;
  }

  private own(): void {
    if (this.readers > 0) {
      this.keys = this.keys.slice();
      this.values = this.values.slice();
      this.readers = 0;
    }
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.own();
    const i = this.lowerBound(key);
    const k = this.keys[i];
    if (k !== undefined && compareBytes(k, key) === 0) {
      this.values[i] = value;
    } else {
      this.keys.splice(i, 0, key);
      this.values.splice(i, 0, value);
    }
  }

  del(key: Uint8Array): void {
    const i = this.lowerBound(key);
    const k = this.keys[i];
    if (k !== undefined && compareBytes(k, key) === 0) {
      this.own();
      this.keys.splice(i, 1);
      this.values.splice(i, 1);
    }
  }

  /** Removes the keys in [`gte`, `lt`). */
  delRange(gte: Uint8Array, lt: Uint8Array): void {
    const from = this.lowerBound(gte);
    const to = this.lowerBound(lt);
    if (to <= from) return;
    this.own();
    this.keys.splice(from, to - from);
    this.values.splice(from, to - from);
  }

  /** The current arrays, frozen for the caller until {@link release}. */
  snapshot(): { keys: Uint8Array[]; values: Uint8Array[] } {
    this.readers++;
    return { keys: this.keys, values: this.values };
  }

  /** Ends a snapshot; a no-op when a write has since replaced the arrays. */
  release(keys: Uint8Array[]): void {
    if (keys === this.keys && this.readers > 0) this.readers--;
  }
}

class MemoryIterator implements KvIterator {
  private readonly keys: Uint8Array[];
  private readonly values: Uint8Array[];
  /** First index inside the bounds. */
  private readonly lo: number;
  /** One past the last index inside the bounds. */
  private readonly hi: number;
  private pos: number;
  private remaining: number;
  private closed = false;

  constructor(
    private readonly map: SortedMap,
    private readonly options: KvIteratorOptions,
    private readonly checkOpen: () => void,
  ) {
    const snap = map.snapshot();
    this.keys = snap.keys;
    this.values = snap.values;
    let lo = 0;
    let hi = this.keys.length;
    if (options.gte !== undefined) lo = Math.max(lo, map.lowerBound(options.gte, this.keys));
    if (options.gt !== undefined) {
      let i = map.lowerBound(options.gt, this.keys);
      const k = this.keys[i];
      if (k !== undefined && compareBytes(k, options.gt) === 0) i++;
      lo = Math.max(lo, i);
    }
    if (options.lt !== undefined) hi = Math.min(hi, map.lowerBound(options.lt, this.keys));
    if (options.lte !== undefined) {
      let i = map.lowerBound(options.lte, this.keys);
      const k = this.keys[i];
      if (k !== undefined && compareBytes(k, options.lte) === 0) i++;
      hi = Math.min(hi, i);
    }
    this.lo = lo;
    this.hi = Math.max(lo, hi);
    this.pos = options.reverse === true ? this.hi - 1 : this.lo;
    this.remaining =
      options.limit === undefined || options.limit < 0 ? Number.POSITIVE_INFINITY : options.limit;
  }

  next(max: number): Promise<KvEntry[]> {
    try {
      this.checkOpen();
      if (this.closed) throw new StoreError("closed", "iterator is closed");
    } catch (err) {
      return Promise.reject(err);
    }
    const out: KvEntry[] = [];
    const keysOnly = this.options.keysOnly === true;
    const reverse = this.options.reverse === true;
    while (out.length < max && this.remaining > 0) {
      if (reverse ? this.pos < this.lo : this.pos >= this.hi) break;
      out.push([
        this.keys[this.pos] as Uint8Array,
        keysOnly ? EMPTY : (this.values[this.pos] as Uint8Array),
      ]);
      this.pos += reverse ? -1 : 1;
      this.remaining--;
    }
    return Promise.resolve(out);
  }

  seek(key: Uint8Array): void {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(this.keys[mid] as Uint8Array, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (this.options.reverse === true) {
      throw new StoreError("invalid_argument", "seek is supported on forward iterators only");
    }
    this.pos = Math.max(lo, this.lo);
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.map.release(this.keys);
    }
    return Promise.resolve();
  }
}

class MemoryShard implements KvShard {
  private readonly maps: Record<Keyspace, SortedMap> = {
    objects: new SortedMap(),
    blobs: new SortedMap(),
    system: new SortedMap(),
  };

  constructor(
    readonly name: string,
    private readonly checkOpen: () => void,
  ) {}

  get(keyspace: Keyspace, key: Uint8Array): Promise<Uint8Array | undefined> {
    try {
      this.checkOpen();
      return Promise.resolve(this.maps[keyspace].get(key));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  getMany(keyspace: Keyspace, keys: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    try {
      this.checkOpen();
      const map = this.maps[keyspace];
      return Promise.resolve(keys.map((k) => map.get(k)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  iterator(keyspace: Keyspace, options: KvIteratorOptions = {}): KvIterator {
    this.checkOpen();
    return new MemoryIterator(this.maps[keyspace], options, this.checkOpen);
  }

  write(ops: readonly KvWriteOp[]): Promise<void> {
    try {
      this.checkOpen();
      for (const op of ops) {
        // Copy: the caller may reuse its buffers after the write resolves.
        if (op.type === "put") this.maps[op.keyspace].put(op.key.slice(), op.value.slice());
        else this.maps[op.keyspace].del(op.key);
      }
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  clear(keyspace: Keyspace, range: { gte: Uint8Array; lt: Uint8Array }): Promise<void> {
    try {
      this.checkOpen();
      this.maps[keyspace].delRange(range.gte, range.lt);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

/** Options of {@link createMemoryEngine}. None yet; reserved for limits. */
export type MemoryEngineOptions = Record<string, never>;

/**
 * Creates an in-memory storage engine: ordered maps per shard and keyspace, atomic
 * batches (applied synchronously), snapshot iterators (a write while an iterator is open
 * copies the keyspace's arrays first, so the iterator keeps its point-in-time view). For tests and
 * ephemeral use; nothing survives the process, and `sync` has no effect.
 *
 * @example
 * ```ts
 * const engine = createMemoryEngine();
 * const store = await createEntryStore({ engine, shard: "cls/0" });
 * ```
 */
export function createMemoryEngine(_options: MemoryEngineOptions = {}): KvEngine {
  const shards = new Map<string, MemoryShard>();
  let open = true;
  const checkOpen = (): void => {
    if (!open) throw new StoreError("closed", "memory engine is closed");
  };
  return {
    kind: "memory",
    openShard(name: string): Promise<KvShard> {
      try {
        checkOpen();
        validateShardName(name);
      } catch (err) {
        return Promise.reject(err);
      }
      let shard = shards.get(name);
      if (shard === undefined) {
        shard = new MemoryShard(name, checkOpen);
        shards.set(name, shard);
      }
      return Promise.resolve(shard);
    },
    listShards(): Promise<string[]> {
      try {
        checkOpen();
      } catch (err) {
        return Promise.reject(err);
      }
      return Promise.resolve([...shards.keys()].sort());
    },
    close(): Promise<void> {
      open = false;
      return Promise.resolve();
    },
  };
}

/** Shard names are 1–255 UTF-8 bytes. */
export function validateShardName(name: string): void {
  const len = Buffer.byteLength(name, "utf8");
  if (typeof name !== "string" || len === 0 || len > 255) {
    throw new StoreError("invalid_argument", `shard name must be 1-255 UTF-8 bytes, got ${len}`);
  }
}

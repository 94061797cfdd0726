// A KvEngine wrapper that counts the bytes (keys + values) reads return, for the
// "bytes read" budget of seed 003 §10.
import type { KvEngine, KvEntry, KvShard } from "../src/index.js";

/** A {@link KvEngine} that counts bytes read through it. */
export interface CountingEngine extends KvEngine {
  /** Bytes of keys and values returned by reads since the last reset. */
  bytesRead: number;
}

/** Wraps `engine` so every read adds the size of what it returned to `bytesRead`. */
export function countingEngine(engine: KvEngine): CountingEngine {
  const shards = new Map<string, KvShard>();
  const counter: CountingEngine = {
    kind: engine.kind,
    bytesRead: 0,
    async openShard(name: string): Promise<KvShard> {
      const cached = shards.get(name);
      if (cached !== undefined) return cached;
      const inner = await engine.openShard(name);
      const shard: KvShard = {
        name,
        async get(ks, key) {
          const v = await inner.get(ks, key);
          counter.bytesRead += key.length + (v?.length ?? 0);
          return v;
        },
        async getMany(ks, keys) {
          const vs = await inner.getMany(ks, keys);
          for (let i = 0; i < keys.length; i++)
            counter.bytesRead += (keys[i]?.length ?? 0) + (vs[i]?.length ?? 0);
          return vs;
        },
        iterator(ks, options) {
          const it = inner.iterator(ks, options);
          return {
            async next(max: number): Promise<KvEntry[]> {
              const rows = await it.next(max);
              for (const [k, v] of rows) counter.bytesRead += k.length + v.length;
              return rows;
            },
            seek: (key: Uint8Array) => it.seek(key),
            close: () => it.close(),
          };
        },
        write: (ops, options) => inner.write(ops, options),
        clear: (ks, range) => inner.clear(ks, range),
      };
      shards.set(name, shard);
      return shard;
    },
    listShards: () => engine.listShards(),
    close: () => engine.close(),
  };
  return counter;
}

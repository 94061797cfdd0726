// The floor under odgm's storage: the same `@nxtedition/rocksdb` binding, called directly
// (no entry store, no codec, no RPC), in the harness process.

interface RawBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
  write(options: { sync: boolean }): Promise<void>;
}
interface RawDb {
  open(options: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
  batch(): RawBatch;
  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
}

/** Raw RocksDB operations on one database. */
export interface RawRocks {
  /** One put in its own write batch, WAL synced (odgm's SetValue writes with sync on). */
  put(key: string, value: Uint8Array): Promise<void>;
  /** `n` puts in one synced write batch. */
  putMany(keys: readonly string[], value: Uint8Array): Promise<void>;
  /** One point read. */
  get(key: string): Promise<Uint8Array | undefined>;
  close(): Promise<void>;
}

const enc = new TextEncoder();

/** Opens (creating) a RocksDB database at `location` with the binding odgm uses. */
export async function openRawRocks(location: string): Promise<RawRocks> {
  const name = "@nxtedition/rocksdb";
  const mod = (await import(name)) as {
    RocksLevel: new (location: string, options: Record<string, unknown>) => RawDb;
  };
  const db = new mod.RocksLevel(location, { keyEncoding: "buffer", valueEncoding: "buffer" });
  await db.open({ createIfMissing: true });
  return {
    async put(key, value) {
      const b = db.batch();
      b.put(enc.encode(key), value);
      await b.write({ sync: true });
    },
    async putMany(keys, value) {
      const b = db.batch();
      for (const k of keys) b.put(enc.encode(k), value);
      await b.write({ sync: true });
    },
    async get(key) {
      const [v] = await db.getMany([enc.encode(key)]);
      return v;
    },
    close: () => db.close(),
  };
}

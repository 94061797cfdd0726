import { create } from "@bufbuild/protobuf";
import { createEntryStore } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { type ValData, ValDataSchema, ValType } from "@oprc/grpc-api";

/** The data set every odgm subject reads and writes (collection `bench`, partition 0). */
export interface DataSet {
  /** Objects with numeric ids `1..objects`. */
  readonly objects: number;
  /** Objects with string ids `o1..o<stringObjects>` (same entries). */
  readonly stringObjects: number;
  /** Entries per object (`f0..f<n-1>`, 16-byte values). */
  readonly entriesPerObject: number;
}

/** Collection and shard the harness uses. */
export const COLLECTION = "bench";
/** The 256-entry object (string id) for Get-object. */
export const BIG_OBJECT = "big";
/** The 100-entry object (string id) for ListValues. */
export const LIST_OBJECT = "list100";
/** Size of every value the harness writes. */
export const VALUE_BYTES = 16;

/**
 * A 16-byte value: pseudo-random bytes derived from `seed` (deterministic, and not
 * compressible, so data-directory sizes are not flattered by RocksDB's block compression).
 */
export function benchValue(seed: number): ValData {
  const data = new Uint8Array(VALUE_BYTES);
  let x = (seed * 0x9e3779b1 + 0x6d2b79f5) >>> 0;
  for (let i = 0; i < VALUE_BYTES; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    data[i] = x & 0xff;
  }
  return create(ValDataSchema, { data, type: ValType.BYTE });
}

/** What loading took. */
export interface PreloadReport {
  /** Objects written (numeric + string + the two fixed objects). */
  readonly objects: number;
  /** Entries written. */
  readonly entries: number;
  /** Wall time (ms). */
  readonly ms: number;
}

/**
 * Writes the data set straight into an odgm data directory through the entry store
 * (`createEntryStore` + `openRocksEngine`, shard `bench/0` as odgm names it), with WAL sync
 * off and many objects in flight so group commit makes big write batches. Much faster than
 * loading through the API, and the result is byte-for-byte what odgm would have written.
 * Run it before odgm starts (RocksDB allows one process per directory).
 */
export async function preloadOdgm(dataDir: string, set: DataSet): Promise<PreloadReport> {
  const start = performance.now();
  const engine = await openRocksEngine({ location: dataDir });
  let objects = 0;
  let entries = 0;
  try {
    const store = await createEntryStore({ engine, shard: `${COLLECTION}/0`, sync: false });
    const entriesOf = (n: number, seed: number): Map<string, ValData> => {
      const m = new Map<string, ValData>();
      for (let k = 0; k < n; k++) m.set(`f${k}`, benchValue(seed * 1024 + k));
      return m;
    };
    const write = async (id: string, n: number, seed: number): Promise<void> => {
      await store.setObject(id, { entries: entriesOf(n, seed) }, { sync: false });
      objects++;
      entries += n;
    };
    await write(BIG_OBJECT, 256, 0);
    await write(LIST_OBJECT, 100, 0);
    const inFlight = 512;
    for (let base = 1; base <= Math.max(set.objects, set.stringObjects); base += inFlight) {
      const batch: Promise<void>[] = [];
      for (let i = base; i < base + inFlight; i++) {
        if (i <= set.objects) batch.push(write(String(i), set.entriesPerObject, i));
        if (i <= set.stringObjects) batch.push(write(`o${i}`, set.entriesPerObject, i));
      }
      await Promise.all(batch);
    }
    await store.close();
  } finally {
    await engine.close();
  }
  // Open once more so RocksDB replays the write-ahead log into SST files: odgm then starts
  // on a flushed database, as it would after a normal restart, not with a WAL to recover.
  await (await openRocksEngine({ location: dataDir })).close();
  return { objects, entries, ms: performance.now() - start };
}

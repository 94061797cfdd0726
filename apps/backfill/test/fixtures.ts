// Test fixtures: legacy datasets written by the entry store's legacy write mode on a real
// RocksDB, a raw scan of every column family, and normalization for comparisons.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createEntryStore, type EntryStore, type KvEngine } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { decodeKey } from "@oprc/granular-key";
import {
  EntryRecordSchema,
  ObjectEventSchema,
  ObjectMetaRecordSchema,
  type ValData,
  ValDataSchema,
  ValType,
} from "@oprc/grpc-api";

export const COLLECTION = "orders";
export const PARTITION = 0;
export const SHARD: string = `${COLLECTION}/${PARTITION}`;

/** A deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A temp directory removed by the returned cleanup. */
export async function tempDir(
  prefix = "odgm-backfill-",
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** The expected content of one legacy object. */
export interface LegacyObject {
  readonly id: bigint;
  readonly entries: Map<string, ValData>;
  readonly withEvent: boolean;
}

/** Options of {@link writeLegacyDataset}. */
export interface DatasetOptions {
  /** Number of legacy (numeric-id) objects. */
  objects: number;
  /** Entries per object (numeric keys; every fifth object also gets string keys). */
  entries: number;
  /** PRNG seed. */
  seed?: number;
  /** Also write this many granular string-id objects, which the backfill must leave alone. */
  granularObjects?: number;
  /** Shard name. Default {@link SHARD}. */
  shard?: string;
}

function value(rand: () => number, size: number): ValData {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = Math.floor(rand() * 256);
  return create(ValDataSchema, {
    data,
    type: rand() < 0.1 ? ValType.CRDT_MAP : ValType.BYTE,
  });
}

/**
 * Writes legacy blobs through the entry store's legacy write mode (`granular: false`,
 * what a node with `ODGM_ENABLE_GRANULAR_STORAGE=false` does) into the engine.
 */
export async function writeLegacyDataset(
  engine: KvEngine,
  options: DatasetOptions,
): Promise<LegacyObject[]> {
  const rand = prng(options.seed ?? 1);
  const store = await createEntryStore({
    engine,
    shard: options.shard ?? SHARD,
    granular: false,
    sync: false,
  });
  const objects: LegacyObject[] = [];
  try {
    for (let i = 0; i < options.objects; i++) {
      // Sparse ids, spread over the u64 range's low end and a few very large ones.
      const id = i % 97 === 5 ? 0xffff_ffff_ffff_0000n + BigInt(i) : BigInt(i * 3 + 1);
      const entries = new Map<string, ValData>();
      for (let k = 0; k < options.entries; k++)
        entries.set(String(k * 7), value(rand, 8 + Math.floor(rand() * 24)));
      if (i % 5 === 0) {
        entries.set(`name-${i}`, value(rand, 12));
        entries.set("007", value(rand, 4));
      }
      const withEvent = i % 11 === 0;
      await store.setObject(id.toString(), {
        entries,
        ...(withEvent
          ? {
              event: create(ObjectEventSchema, {
                funcTrigger: { fn1: { onComplete: [], onError: [] } },
              }),
            }
          : {}),
      });
      objects.push({ id, entries, withEvent });
    }
  } finally {
    await store.close();
  }
  if ((options.granularObjects ?? 0) > 0) {
    const granular = await createEntryStore({ engine, shard: options.shard ?? SHARD, sync: false });
    try {
      for (let i = 0; i < (options.granularObjects ?? 0); i++) {
        await granular.setEntry(`user-${i}`, "name", value(rand, 10));
      }
    } finally {
      await granular.close();
    }
  }
  return objects.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Creates a database in `dir` holding a legacy dataset; closes it. */
export async function createLegacyDatabase(
  dir: string,
  options: DatasetOptions,
): Promise<LegacyObject[]> {
  const engine = await openRocksEngine({ location: dir });
  try {
    return await writeLegacyDataset(engine, options);
  } finally {
    await engine.close();
  }
}

/** Checks every expected object through the entry store's read path. */
export async function checkObjects(
  store: EntryStore,
  expected: readonly LegacyObject[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const o of expected) {
    const got = await store.getObject(o.id.toString());
    if (got === undefined) {
      problems.push(`${o.id}: missing`);
      continue;
    }
    if (got.legacy) problems.push(`${o.id}: still legacy`);
    const keys = new Map<string, ValData>();
    for (const [k, v] of got.entries) keys.set(String(k), v);
    for (const [k, v] of got.entriesStr) keys.set(k, v);
    if (keys.size !== o.entries.size)
      problems.push(`${o.id}: ${keys.size} entries, expected ${o.entries.size}`);
    for (const [k, v] of o.entries) {
      const g = keys.get(k);
      if (g === undefined || g.type !== v.type || Buffer.compare(g.data, v.data) !== 0) {
        problems.push(`${o.id}: entry ${k} differs`);
      }
    }
    if ((got.event !== undefined) !== o.withEvent) problems.push(`${o.id}: event config differs`);
  }
  return problems;
}

// ---------------------------------------------------------------- raw scans

interface RawLevel {
  readonly columns: Record<string, object>;
  open(options: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
  iterator(options: Record<string, unknown>): {
    nextv(n: number): Promise<[Uint8Array, Uint8Array][]>;
    close(): Promise<void>;
  };
}

/** One raw record: column family, key and value in hex. */
export type RawRecord = readonly [column: string, key: string, value: string];

/**
 * Reads every record of every column family straight from RocksDB (no entry store, no
 * engine): the ground truth for "nothing changed" and "no blob left".
 */
export async function rawScan(dir: string): Promise<RawRecord[]> {
  const specifier = "@nxtedition/rocksdb";
  const mod = (await import(specifier)) as {
    RocksLevel: new (location: string, options: Record<string, unknown>) => RawLevel;
  };
  const db = new mod.RocksLevel(dir, { keyEncoding: "buffer", valueEncoding: "buffer" });
  const names = ["default", "objects", "blobs", "system"];
  const columns: Record<string, object> = {};
  for (const n of names) columns[n] = {};
  await db.open({ createIfMissing: false, columns });
  const out: RawRecord[] = [];
  try {
    for (const n of names) {
      const it = db.iterator({
        column: db.columns[n],
        keyEncoding: "buffer",
        valueEncoding: "buffer",
      });
      try {
        for (;;) {
          const rows = await it.nextv(1000);
          if (rows.length === 0) break;
          for (const [k, v] of rows)
            out.push([n, Buffer.from(k).toString("hex"), Buffer.from(v).toString("hex")]);
        }
      } finally {
        await it.close();
      }
    }
  } finally {
    await db.close();
  }
  return out;
}

/** Number of raw records in the `blobs` column family. */
export function blobCount(records: readonly RawRecord[]): number {
  return records.filter(([c]) => c === "blobs").length;
}

/**
 * The records of the `objects` and `blobs` column families with the times a conversion
 * stamps (metadata created/updated, entry updated) zeroed, so runs at different moments
 * compare equal when they wrote the same data. The 4-byte shard tag prefix is kept.
 */
export function normalizedData(records: readonly RawRecord[]): string[] {
  const out: string[] = [];
  for (const [column, keyHex, valueHex] of records) {
    if (column !== "objects" && column !== "blobs") continue;
    if (column === "blobs") {
      out.push(`${column} ${keyHex} ${valueHex}`);
      continue;
    }
    const key = Buffer.from(keyHex, "hex").subarray(4);
    const bytes = Buffer.from(valueHex, "hex");
    const decoded = decodeKey(new Uint8Array(key));
    let value = valueHex;
    if (decoded.record === "metadata") {
      const m = fromBinary(ObjectMetaRecordSchema, bytes);
      m.createdAtMs = 0n;
      m.updatedAtMs = 0n;
      value = Buffer.from(toBinary(ObjectMetaRecordSchema, m)).toString("hex");
    } else if (decoded.record === "numeric_entry" || decoded.record === "string_entry") {
      const e = fromBinary(EntryRecordSchema, bytes);
      e.updatedAtMs = 0n;
      value = Buffer.from(toBinary(EntryRecordSchema, e)).toString("hex");
    }
    out.push(`${column} ${keyHex} ${value}`);
  }
  return out;
}

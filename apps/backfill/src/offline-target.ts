import { existsSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import {
  createEntryStore,
  type EntryStore,
  isStoreError,
  type KvEngine,
  type KvShard,
} from "@oprc/entry-store";
import { type ObjData, ObjDataSchema } from "@oprc/grpc-api/messages";
import { BackfillError } from "./backfill-error.js";
import {
  decodeCheckpoint,
  encodeCheckpoint,
  legacyIdOf,
  legacyKeyOf,
} from "./checkpoint-record.js";
import {
  type BatchOutcome,
  type Checkpoint,
  type ConsistencyReport,
  type ConversionTarget,
  emptyOutcome,
  messageOf,
} from "./conversion-target.js";
import {
  blobEntryCount,
  blobToComparable,
  compareObjects,
  objectToComparable,
} from "./object-compare.js";

/** The shard holding an odgm node's own records; the offline checkpoint lives there. */
export const NODE_SHARD = "__odgm__";
const ENCODER = new TextEncoder();

/** Options of {@link openOfflineTarget}. */
export interface OfflineTargetOptions {
  /** The node's data directory (`ODGM_DATA_DIR`): the RocksDB database itself. */
  readonly dataDir: string;
  readonly collection: string;
  readonly partition: number;
  /** Dry run: open nothing that could write. */
  readonly dryRun: boolean;
  /** An open engine to use instead of opening `dataDir` (left open on close). */
  readonly engine?: KvEngine | undefined;
  /** Sync every conversion's WAL write. Default false: see the README (checkpoints sync). */
  readonly syncEachObject?: boolean | undefined;
  /** Clock for record timestamps. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
}

async function openEngine(dataDir: string): Promise<KvEngine> {
  if (!existsSync(dataDir)) {
    throw new BackfillError("not_found", `data directory ${dataDir} does not exist`);
  }
  const { openRocksEngine } = await import("@oprc/entry-store/rocksdb");
  try {
    return await openRocksEngine({ location: dataDir, createIfMissing: false });
  } catch (err) {
    if (isStoreError(err, "locked")) {
      throw new BackfillError(
        "locked",
        `the database in ${dataDir} is held by another process (is an odgm node running on it?). Stop the node before an offline backfill, or convert through the running node with --endpoint.`,
        { cause: err },
      );
    }
    if (isStoreError(err, "unavailable"))
      throw new BackfillError("io", err.message, { cause: err });
    throw new BackfillError("io", `cannot open the database in ${dataDir}: ${messageOf(err)}`, {
      cause: err,
    });
  }
}

/** Opens a stopped node's database for conversion (spec §10, offline mode). */
export async function openOfflineTarget(options: OfflineTargetOptions): Promise<ConversionTarget> {
  const engine = options.engine ?? (await openEngine(options.dataDir));
  const owned = options.engine === undefined;
  try {
    const name = `${options.collection}/${options.partition}`;
    const shards = await engine.listShards();
    if (!shards.includes(name)) {
      const known = shards.filter((s) => s !== NODE_SHARD);
      throw new BackfillError(
        "not_found",
        `shard ${name} does not exist in ${options.dataDir} (shards: ${known.length === 0 ? "none" : known.join(", ")})`,
      );
    }
    const kv = await engine.openShard(name);
    const store = options.dryRun
      ? undefined
      : await createEntryStore({
          engine,
          shard: name,
          sync: options.syncEachObject === true,
          ...(options.now === undefined ? {} : { now: options.now }),
        });
    return new OfflineTarget(engine, owned, kv, store, shards.includes(NODE_SHARD), options);
  } catch (err) {
    if (owned) await engine.close().catch(() => {});
    if (isStoreError(err)) throw new BackfillError("io", err.message, { cause: err });
    throw err;
  }
}

class OfflineTarget implements ConversionTarget {
  readonly kind = "offline" as const;
  readonly location: string;
  readonly batchSize = 1;
  private readonly checkpointKey: Uint8Array;

  constructor(
    private readonly engine: KvEngine,
    private readonly owned: boolean,
    private readonly kv: KvShard,
    private readonly store: EntryStore | undefined,
    private nodeShardExists: boolean,
    private readonly options: OfflineTargetOptions,
  ) {
    this.location = options.dataDir;
    this.checkpointKey = ENCODER.encode(`backfill/${options.collection}/${options.partition}`);
  }

  async *listIds(after?: bigint): AsyncIterable<bigint> {
    const it = this.kv.iterator(
      "blobs",
      after === undefined ? { keysOnly: true } : { gt: legacyKeyOf(after), keysOnly: true },
    );
    try {
      for (;;) {
        const rows = await it.next(1024);
        if (rows.length === 0) return;
        for (const [key] of rows) yield legacyIdOf(key);
      }
    } finally {
      await it.close();
    }
  }

  async countEntries(ids: readonly bigint[]): Promise<number> {
    const raws = await this.kv.getMany("blobs", ids.map(legacyKeyOf));
    let n = 0;
    for (const [i, raw] of raws.entries()) {
      if (raw === undefined) continue;
      try {
        n += blobEntryCount(fromBinary(ObjDataSchema, raw));
      } catch (err) {
        throw new BackfillError("io", `legacy blob ${ids[i]} does not decode: ${messageOf(err)}`, {
          cause: err,
        });
      }
    }
    return n;
  }

  private writable(): EntryStore {
    if (this.store === undefined) throw new BackfillError("invalid_argument", "dry run");
    return this.store;
  }

  async convert(ids: readonly bigint[], verify: boolean): Promise<BatchOutcome> {
    const store = this.writable();
    const out = emptyOutcome();
    await Promise.all(ids.map((id) => this.convertOne(store, id, verify, out)));
    return out;
  }

  private async convertOne(
    store: EntryStore,
    id: bigint,
    verify: boolean,
    out: BatchOutcome,
  ): Promise<void> {
    let original: ObjData | undefined;
    try {
      if (verify) original = await store.getLegacyBlob(id);
      const r = await store.convertLegacyObject(id);
      if (!r.converted) {
        out.skipped++;
        return;
      }
      out.converted++;
      out.entries += r.entries;
    } catch (err) {
      out.failures.push({ id: id.toString(), message: messageOf(err) });
      return;
    }
    if (!verify || original === undefined) return;
    try {
      const object = await store.getObject(id.toString());
      out.verified++;
      if (object === undefined) {
        out.mismatches.push({ id: id.toString(), message: "object is missing after conversion" });
        return;
      }
      // Offline nothing else writes: a version other than the blob's (0) is a fault.
      const diff =
        object.version !== 0n
          ? `version ${object.version}, expected 0 (carried over from the blob)`
          : compareObjects(blobToComparable(original), objectToComparable(object));
      if (diff !== undefined) out.mismatches.push({ id: id.toString(), message: diff });
    } catch (err) {
      out.mismatches.push({ id: id.toString(), message: `unreadable: ${messageOf(err)}` });
    }
  }

  async checkConsistency(signal?: AbortSignal): Promise<ConsistencyReport> {
    const store = this.store;
    const report: ConsistencyReport = { objects: 0, entries: 0, problems: [] };
    if (store === undefined) return report;
    let cursor: Uint8Array | undefined;
    do {
      signal?.throwIfAborted();
      const page = await store.listObjects({
        limit: 1024,
        ...(cursor === undefined ? {} : { cursor }),
      });
      for (const o of page.objects) {
        report.objects++;
        try {
          const meta = await store.getMetadata(o.id);
          if (meta?.legacy === true) {
            report.problems.push({ id: o.id, message: "still a legacy blob" });
            continue;
          }
          let count = 0n;
          let entryCursor: Uint8Array | undefined;
          let bad: string | undefined;
          do {
            const entries = await store.listEntries(o.id, {
              limit: 1024,
              ...(entryCursor === undefined ? {} : { cursor: entryCursor }),
            });
            for (const e of entries.entries) {
              count++;
              if (e.version > o.version) {
                bad ??= `entry ${JSON.stringify(e.key)} has version ${e.version} above the object's ${o.version}`;
              }
            }
            entryCursor = entries.nextCursor;
          } while (entryCursor !== undefined);
          report.entries += Number(count);
          if (count !== o.entryCount) {
            bad ??= `metadata counts ${o.entryCount} entries, ${count} are stored`;
          }
          if (bad !== undefined) report.problems.push({ id: o.id, message: bad });
        } catch (err) {
          report.problems.push({ id: o.id, message: `unreadable: ${messageOf(err)}` });
        }
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return report;
  }

  async loadCheckpoint(): Promise<Checkpoint | undefined> {
    // Never create the node shard just to look: a dry run or a no-op rerun writes nothing.
    if (!this.nodeShardExists) return undefined;
    const node = await this.engine.openShard(NODE_SHARD);
    const raw = await node.get("system", this.checkpointKey);
    if (raw === undefined) return undefined;
    return decodeCheckpoint(
      raw,
      this.options.collection,
      this.options.partition,
      `${NODE_SHARD}/system/backfill/${this.options.collection}/${this.options.partition}`,
    );
  }

  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    this.writable();
    const node = await this.engine.openShard(NODE_SHARD);
    this.nodeShardExists = true;
    const value = encodeCheckpoint(this.options.collection, this.options.partition, checkpoint);
    // Synced: RocksDB's WAL is ordered, so this also makes every earlier conversion durable.
    await node.write([{ type: "put", keyspace: "system", key: this.checkpointKey, value }], {
      sync: true,
    });
  }

  async close(): Promise<void> {
    await this.store?.close();
    if (this.owned) await this.engine.close();
  }
}

import { RaftError } from "../core/raft-error.js";
import type { LogStore, PersistBatch } from "../storage-port.js";
import {
  type ConfState,
  type Entry,
  type HardState,
  type Snapshot,
  snapshotBytes,
} from "../types.js";
import type { GroupCommitter } from "./group-committer.js";
import {
  decodeEntryValue,
  decodeFloor,
  decodeHardState,
  decodeSnapshotMeta,
  encodeEntryValue,
  encodeFloor,
  encodeHardState,
  encodeSnapshotMeta,
  entryKey,
  entryKeyIndex,
  groupPrefix,
  LOG_RECORD_VERSION,
  RecordType,
  recordKey,
} from "./log-record-codec.js";
import { type LogDelta, LogState } from "./log-state.js";
import type { RocksLogDatabase, RocksWrite } from "./rocks-log-database.js";

/** The value of a group's erase mark. */
const ERASING = new Uint8Array([LOG_RECORD_VERSION]);

/** Options of {@link createRocksLogStore}. */
export interface RocksLogStoreOptions {
  /** Database holding the log (see `openRocksLogDatabase`); shared by many groups. */
  readonly database: RocksLogDatabase;
  /** Raft group id (e.g. `"orders/3"`); every record key starts with it. */
  readonly groupId: string;
  /**
   * Group committer to batch this store's synced writes with other groups'. Default: none,
   * each `save()` is its own synced WriteBatch.
   */
  readonly committer?: GroupCommitter;
  /**
   * Entries whose payload stays cached in memory (the newest ones). Default 4096. Terms of
   * all retained entries are always in memory; older payloads are read back from RocksDB.
   */
  readonly cacheEntries?: number;
}

/** The RocksDB {@link LogStore}. */
export interface RocksLogStore extends LogStore {
  /** The group id this store was opened for. */
  readonly groupId: string;
  /**
   * Removes the group's entries, snapshot and compaction floor, keeping its term and vote
   * (with the commit index 0), then closes the store: for a replica this node no longer
   * holds. One synced write drops the records and marks the erase, one range deletion
   * removes the entries; an erase a crash cut short is finished when the group is opened
   * again. Opened again, the log is a new member's that still remembers whom it voted for
   * in which term, so it cannot vote twice in one.
   */
  erase(): Promise<void>;
}

/**
 * Opens the durable log of one Raft group in a (shared) RocksDB database, loading its hard
 * state, snapshot, floor and entry terms. Each `save()`/`compact()` is one synced
 * WriteBatch (or part of one, through a group committer); reads are synchronous against
 * the accepted in-memory view.
 *
 * @example
 * ```ts
 * const database = await openRocksLogDatabase({ path: dir });
 * const store = await createRocksLogStore({ database, groupId: "g1" });
 * await store.save({ entries: [{ index: 1, term: 1, type: "normal", data: new Uint8Array() }] });
 * ```
 */
export async function createRocksLogStore(options: RocksLogStoreOptions): Promise<RocksLogStore> {
  const { database, groupId, committer } = options;
  const prefix = groupPrefix(groupId);
  const colOpt = { column: database.column as object };
  const load = (lo: number, hi: number): Entry[] => {
    const keys: Uint8Array[] = [];
    for (let i = lo; i < hi; i++) keys.push(entryKey(prefix, i));
    const values = database.db._getManySync(keys, colOpt);
    return values.map((v, k) => {
      if (v === undefined) throw new RaftError("invalid_state", `entry ${lo + k} missing on disk`);
      return decodeEntryValue(lo + k, v);
    });
  };
  const state = new LogState({ cacheEntries: options.cacheEntries ?? 4096, load });

  // Recover: fixed records first, then every entry of the group in index order.
  // Every entry key of the group, and what marks an erase whose range deletion may not
  // have run (a crash between the two): it is finished before anything is read.
  const allEntries = [entryKey(prefix, 0), recordKey(prefix, RecordType.entry + 1)] as const;
  const erasing = recordKey(prefix, RecordType.erasing);
  const [hs, meta, data, floor, mark] = database.db._getManySync(
    [
      recordKey(prefix, RecordType.hardState),
      recordKey(prefix, RecordType.snapshotMeta),
      recordKey(prefix, RecordType.snapshotData),
      recordKey(prefix, RecordType.floor),
      erasing,
    ],
    colOpt,
  );
  if (mark !== undefined) {
    await database.clear(...allEntries);
    await database.write([{ type: "del", key: erasing }], true);
  }
  if (hs !== undefined) state.hardState = decodeHardState(hs);
  if (meta !== undefined) {
    state.snapshot = {
      metadata: decodeSnapshotMeta(meta),
      data: data === undefined ? new Uint8Array() : new Uint8Array(data), // a copy, not a Buffer view
    };
  }
  if (floor !== undefined) {
    const f = decodeFloor(floor);
    state.floorIndex = f.index;
    state.floorTerm = f.term;
  }
  const rows = await database.db
    .iterator({
      ...colOpt,
      gte: entryKey(prefix, 0),
      lte: entryKey(prefix, Number.MAX_SAFE_INTEGER),
    })
    .all();
  let expect = state.floorIndex + 1;
  for (const [k, v] of rows) {
    const index = entryKeyIndex(k);
    if (index <= state.floorIndex) continue; // left by a crash before a compaction's range deletion
    if (index !== expect) {
      throw new RaftError("invalid_state", `log of ${groupId} has a hole at ${expect}`);
    }
    const e = decodeEntryValue(index, v);
    state.terms.push(e.term);
    state.cache.push(e);
    expect++;
  }
  // Apply the cache bound to what was loaded.
  const drop = state.cache.length - (options.cacheEntries ?? 4096);
  for (let i = 0; i < drop; i++) state.cache[i] = undefined;

  let closed = false;
  let failed: unknown;
  const check = (): void => {
    if (closed) throw new RaftError("invalid_state", "log store is closed");
    if (failed !== undefined) {
      throw new RaftError("invalid_state", "an earlier write failed; reopen the store", {
        cause: failed,
      });
    }
  };
  const toWrites = (delta: LogDelta): RocksWrite[] => {
    const ops: RocksWrite[] = [];
    if (delta.snapshot !== undefined) {
      ops.push({
        type: "put",
        key: recordKey(prefix, RecordType.snapshotMeta),
        value: encodeSnapshotMeta(delta.snapshot.metadata),
      });
      ops.push({
        type: "put",
        key: recordKey(prefix, RecordType.snapshotData),
        value: snapshotBytes(delta.snapshot.data),
      });
    }
    if (delta.floor !== undefined) {
      ops.push({
        type: "put",
        key: recordKey(prefix, RecordType.floor),
        value: encodeFloor(delta.floor.index, delta.floor.term),
      });
    }
    // Entries at or below a new floor are dead whether or not they are still on disk
    // (recovery skips them): one range deletion removes them once the floor is durable
    // (`persist`). Only a truncated suffix above it is deleted key by key, in the batch.
    const floor = delta.floor?.index ?? 0;
    for (const [lo, hi] of delta.deleted) {
      for (let i = Math.max(lo, floor + 1); i <= hi; i++) {
        ops.push({ type: "del", key: entryKey(prefix, i) });
      }
    }
    for (const e of delta.put) {
      ops.push({ type: "put", key: entryKey(prefix, e.index), value: encodeEntryValue(e) });
    }
    if (delta.hardState !== undefined) {
      ops.push({
        type: "put",
        key: recordKey(prefix, RecordType.hardState),
        value: encodeHardState(delta.hardState),
      });
    }
    return ops;
  };
  const persist = async (delta: LogDelta): Promise<void> => {
    const ops = toWrites(delta);
    if (ops.length === 0) return;
    try {
      if (committer !== undefined) await committer.write(ops);
      else await database.write(ops, true);
      // From index 0, so what a crash kept of an earlier compaction goes too.
      if (delta.floor !== undefined) {
        await database.clear(entryKey(prefix, 0), entryKey(prefix, delta.floor.index + 1));
      }
    } catch (e) {
      failed = e;
      throw RaftError.from(e, "unavailable");
    }
  };

  return {
    groupId,
    initialState(): { hardState: HardState; confState: ConfState } {
      check();
      return { hardState: state.hardState, confState: state.snapshot.metadata.confState };
    },
    entries(lo: number, hi: number, maxBytes?: number): Entry[] {
      check();
      return state.entries(lo, hi, maxBytes);
    },
    term(index: number): number {
      check();
      return state.term(index);
    },
    firstIndex(): number {
      check();
      return state.firstIndex();
    },
    lastIndex(): number {
      check();
      return state.lastIndex();
    },
    snapshot(): Snapshot {
      check();
      return state.snapshot;
    },
    save(batch: PersistBatch): Promise<void> {
      try {
        check();
        return persist(state.applyBatch(batch));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    compact(index: number, snapshot: Snapshot): Promise<void> {
      try {
        check();
        return persist(state.compact(index, snapshot));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    async erase(): Promise<void> {
      check();
      const { term, vote } = state.hardState;
      // One synced write drops the snapshot and floor, keeps term and vote, and marks the
      // erase; then one range deletion removes the entries (however many: deleting them
      // one by one in the synced write held up every group's log writes, about 300 ms per
      // 100,000 entries), and the mark goes. A crash in between leaves the mark, and the
      // next open finishes the erase before it reads the log.
      const ops: RocksWrite[] = [
        { type: "del", key: recordKey(prefix, RecordType.snapshotMeta) },
        { type: "del", key: recordKey(prefix, RecordType.snapshotData) },
        { type: "del", key: recordKey(prefix, RecordType.floor) },
        {
          type: "put",
          key: recordKey(prefix, RecordType.hardState),
          value: encodeHardState({ term, vote, commit: 0 }),
        },
        { type: "put", key: erasing, value: ERASING },
      ];
      closed = true;
      if (committer !== undefined) await committer.write(ops);
      else await database.write(ops, true);
      await database.clear(...allEntries);
      // Not synced: the next synced write of this database covers it, and if a crash loses
      // it, the next open deletes the (already deleted) entries again.
      await database.write([{ type: "del", key: erasing }], false);
    },
    async close(): Promise<void> {
      closed = true;
    },
  };
}

// The durable change log of a shard: one record per committed mutation that wrote, under a
// revision that counts from 1 in commit order. The ordered applier writes each record in
// the same engine write as the mutation it records, so the log never misses or invents a
// change; replicas applying the same log entries in the same order assign the same
// revisions. Records live in the `system` keyspace (a snapshot carries them):
//   0x00 0x03            → head revision (u64 BE), the last revision assigned
//   0x01 <revision u64>  → `ChangeRecord` (protobuf)
//   0x02 <name UTF-8>    → a reader's cursor (u64 BE): the last revision it has finished
import { fromBinary } from "@bufbuild/protobuf";
import {
  ChangeAction,
  type ChangeRecord,
  ChangeRecordSchema,
  type KeyChange,
} from "@oprc/grpc-api/messages";
import { parseCanonicalU64 } from "@oprc/oprc-id";
import { readU64, writeU64 } from "./bytes.js";
import { encodeChangeRecord } from "./change-record-codec.js";
import type { KvShard, KvWriteOp } from "./kv.js";
import type { MutationPlan } from "./mutation-planner.js";
import { StoreError } from "./store-error.js";

/** Key of the head revision in the `system` keyspace. */
export const CHANGE_HEAD_KEY: Uint8Array = Uint8Array.of(0x00, 0x03);
const RECORD_PREFIX = 0x01;
const RECORDS_END = Uint8Array.of(RECORD_PREFIX + 1);
const CURSOR_PREFIX = 0x02;
const CURSORS_END = Uint8Array.of(CURSOR_PREFIX + 1);

/** Key of the record of `revision`. */
export function changeKey(revision: bigint): Uint8Array {
  const out = new Uint8Array(9);
  out[0] = RECORD_PREFIX;
  writeU64(out, 1, revision);
  return out;
}

function revisionOf(key: Uint8Array): bigint {
  if (key.length !== 9 || key[0] !== RECORD_PREFIX) {
    throw new StoreError("corrupt_record", "change log key is not 0x01 + 8 bytes", { key });
  }
  return readU64(key, 1);
}

function u64(value: bigint): Uint8Array {
  const out = new Uint8Array(8);
  writeU64(out, 0, value);
  return out;
}

/** Reads the head revision (0 for a shard that never logged a change). */
export async function readChangeHead(kv: KvShard): Promise<bigint> {
  const raw = await kv.get("system", CHANGE_HEAD_KEY);
  if (raw === undefined) return 0n;
  if (raw.length !== 8) {
    throw new StoreError("corrupt_record", "change head record is not 8 bytes", {
      key: CHANGE_HEAD_KEY,
    });
  }
  return readU64(raw, 0);
}

const ACTIONS = {
  create: ChangeAction.CREATE,
  update: ChangeAction.UPDATE,
  delete: ChangeAction.DELETE,
};

/** What a change record carries beyond ids, actions and versions. */
export interface ChangeLogContent {
  /** The new value of each created or updated entry. */
  readonly values: boolean;
  /** The object's trigger configuration (`event`), when it has one. */
  readonly triggers: boolean;
  /**
   * The trigger fan-out cap: a record of a mutation that changed more keys says how many
   * lay beyond it (`trigger_keys_skipped`). Default: no cap.
   */
  readonly triggerFanoutCap?: number | undefined;
}

/**
 * The log writes of `plans` (those that wrote), numbered from `head + 1`, plus the new head.
 */
export function changeLogWrites(
  plans: readonly {
    readonly id: string;
    readonly plan: MutationPlan;
    readonly timestampMs: number;
  }[],
  head: bigint,
  content: ChangeLogContent,
): { writes: KvWriteOp[]; head: bigint; records: ChangeRecord[] } {
  const values = content.values;
  const cap = content.triggerFanoutCap;
  const writes: KvWriteOp[] = [];
  const records: ChangeRecord[] = [];
  let rev = head;
  for (const { id, plan, timestampMs } of plans) {
    const r = plan.result;
    if (!r.wrote) continue;
    rev++;
    // Literals, not create(): this runs for every mutation on every replica, and every
    // field is set (create() walks the schema for each message).
    const changes: KeyChange[] = r.changed.map((c): KeyChange => {
      const value = values && c.action !== "delete" ? plan.entryChanges.get(c.key) : undefined;
      const change: KeyChange = {
        $typeName: "oprc.KeyChange",
        key: c.key,
        numeric: c.numeric,
        action: ACTIONS[c.action],
      };
      if (value !== undefined && value !== null) {
        change.value = { $typeName: "oprc.ValData", data: value.data, type: value.type };
      }
      return change;
    });
    const numeric = parseCanonicalU64(id);
    const record: ChangeRecord = {
      $typeName: "oprc.ChangeRecord",
      revision: rev,
      objectIdStr: id,
      versionBefore: r.versionBefore,
      versionAfter: r.versionAfter,
      timestampMs: BigInt(Math.max(0, Math.trunc(timestampMs))),
      changes,
      exists: r.exists,
      partitionId: 0,
      triggerKeysSkipped: cap !== undefined && changes.length > cap ? changes.length - cap : 0,
    };
    if (numeric !== undefined) record.objectId = numeric;
    if (content.triggers && r.eventConfig !== undefined) record.event = r.eventConfig;
    writes.push({
      type: "put",
      keyspace: "system",
      key: changeKey(rev),
      value: encodeChangeRecord(record),
    });
    records.push(record);
  }
  if (rev !== head)
    writes.push({ type: "put", keyspace: "system", key: CHANGE_HEAD_KEY, value: u64(rev) });
  return { writes, head: rev, records };
}

/** Decodes a stored record; a record that does not decode is `corrupt_record`. */
export function decodeChangeRecord(key: Uint8Array, value: Uint8Array): ChangeRecord {
  const revision = revisionOf(key);
  try {
    const r = fromBinary(ChangeRecordSchema, value);
    if (r.revision !== revision) throw new Error(`record says revision ${r.revision}`);
    return r;
  } catch (err) {
    throw new StoreError("corrupt_record", `change record ${revision} does not decode`, {
      key,
      cause: err,
    });
  }
}

/** Up to `limit` records from revision `from` on, in revision order. */
export async function readChanges(
  kv: KvShard,
  from: bigint,
  limit: number,
): Promise<ChangeRecord[]> {
  const it = kv.iterator("system", {
    gte: changeKey(from < 1n ? 1n : from),
    lt: RECORDS_END,
    limit,
  });
  try {
    const out: ChangeRecord[] = [];
    for (;;) {
      const rows = await it.next(Math.min(limit - out.length, 256));
      if (rows.length === 0) break;
      for (const [k, v] of rows) out.push(decodeChangeRecord(k, v));
      if (out.length >= limit) break;
    }
    return out;
  } finally {
    await it.close();
  }
}

/** The oldest revision still in the log, or `undefined` when it is empty. */
export async function oldestChange(kv: KvShard): Promise<bigint | undefined> {
  const it = kv.iterator("system", {
    gte: changeKey(1n),
    lt: RECORDS_END,
    limit: 1,
    keysOnly: true,
  });
  try {
    const [row] = await it.next(1);
    return row === undefined ? undefined : revisionOf(row[0]);
  } finally {
    await it.close();
  }
}

/** Retention of a change log: records beyond either bound are removed. */
export interface ChangeRetention {
  /** Keep at most this many of the newest records. */
  readonly maxRecords: number;
  /** Remove records older than this (by their timestamp), ms. */
  readonly maxAgeMs: number;
  /**
   * Keep every record from this revision on, whatever the bounds say (a reader such as
   * at-least-once trigger delivery has not finished them yet). Default: none held.
   */
  readonly holdFrom?: bigint | undefined;
}

/**
 * Removes the records outside `retention`, oldest first, however many: those beyond the
 * count bound, and those older than the age bound (found by a binary search over the
 * revisions, which are consecutive and, as each leader stamps them in commit order, in time
 * order but for clock steps between leaders: a record near the cut may then go or stay up
 * to that step early or late). One range removal, so a backlog of any size costs the same.
 * The newest record is never removed by age, so the head stays readable. Returns how many
 * records were removed, and the revision from which records are kept.
 */
export async function compactChanges(
  kv: KvShard,
  head: bigint,
  retention: ChangeRetention,
  now: number,
): Promise<{ removed: number; keptFrom: bigint }> {
  const end =
    retention.holdFrom !== undefined && retention.holdFrom < head ? retention.holdFrom : head;
  const first = await firstChangeFrom(kv, 1n, end);
  if (first === undefined) return { removed: 0, keptFrom: end };
  const oldest = first.revision;
  const keepFrom = head - BigInt(retention.maxRecords) + 1n;
  // Everything below `lo` goes by count; records from `lo` on go while older than the cutoff.
  let lo = keepFrom > oldest ? (keepFrom < end ? keepFrom : end) : oldest;
  let hi = end;
  const cutoff = BigInt(Math.max(0, Math.trunc(now - retention.maxAgeMs)));
  // The record at `lo` first: young enough (as at rest, every run) means no search.
  const atLo = lo === oldest ? first : await firstChangeFrom(kv, lo, hi);
  if (atLo === undefined || atLo.timestampMs >= cutoff) hi = lo;
  else lo = atLo.revision + 1n;
  while (lo < hi) {
    const mid = lo + (hi - lo) / 2n;
    const record = await firstChangeFrom(kv, mid, hi);
    if (record === undefined || record.timestampMs >= cutoff) hi = mid;
    else lo = record.revision + 1n;
  }
  if (lo <= oldest) return { removed: 0, keptFrom: oldest };
  await kv.clear("system", { gte: changeKey(0n), lt: changeKey(lo) });
  return { removed: Number(lo - oldest), keptFrom: lo };
}

/** The first change record at or after `from` and before `end`. */
async function firstChangeFrom(
  kv: KvShard,
  from: bigint,
  end: bigint,
): Promise<ChangeRecord | undefined> {
  const it = kv.iterator("system", { gte: changeKey(from), lt: changeKey(end), limit: 1 });
  try {
    const [row] = await it.next(1);
    return row === undefined ? undefined : decodeChangeRecord(row[0], row[1]);
  } finally {
    await it.close();
  }
}

function cursorKey(name: string): Uint8Array {
  const utf8 = new TextEncoder().encode(name);
  const out = new Uint8Array(1 + utf8.length);
  out[0] = CURSOR_PREFIX;
  out.set(utf8, 1);
  return out;
}

/** The stored cursors of the log's readers, by name. */
export async function readCursors(kv: KvShard): Promise<Map<string, bigint>> {
  const it = kv.iterator("system", { gte: Uint8Array.of(CURSOR_PREFIX), lt: CURSORS_END });
  const out = new Map<string, bigint>();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  try {
    for (;;) {
      const rows = await it.next(256);
      if (rows.length === 0) break;
      for (const [k, v] of rows) {
        if (v.length !== 8) {
          throw new StoreError("corrupt_record", "change-log cursor is not 8 bytes", { key: k });
        }
        out.set(decoder.decode(k.subarray(1)), readU64(v, 0));
      }
    }
    return out;
  } finally {
    await it.close();
  }
}

/** Writes for storing `cursors` (a cursor of `undefined` is removed). */
export function cursorWrites(cursors: ReadonlyMap<string, bigint | undefined>): KvWriteOp[] {
  const writes: KvWriteOp[] = [];
  for (const [name, rev] of cursors) {
    const key = cursorKey(name);
    writes.push(
      rev === undefined
        ? { type: "del", keyspace: "system", key }
        : { type: "put", keyspace: "system", key, value: u64(rev) },
    );
  }
  return writes;
}

/**
 * The newest records of a log, in memory: live watchers read what was just written from
 * here instead of each reading it from storage again. The store fills it only while the
 * log has subscribers.
 */
export class RecentChanges {
  private readonly ring: (ChangeRecord | undefined)[];
  /** Revision of the oldest record held (records are contiguous up to the newest). */
  private first = 0n;
  private count = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<ChangeRecord | undefined>(capacity);
  }

  /** Appends records that follow the newest held (anything else restarts the window). */
  add(records: readonly ChangeRecord[]): void {
    for (const r of records) {
      if (this.count === 0 || r.revision !== this.first + BigInt(this.count)) {
        this.first = r.revision;
        this.count = 0;
      }
      this.ring[Number(r.revision % BigInt(this.capacity))] = r;
      if (this.count < this.capacity) this.count++;
      else this.first++;
    }
  }

  /** Up to `limit` records from `from` on, or `undefined` when `from` is not held. */
  read(from: bigint, limit: number): ChangeRecord[] | undefined {
    const end = this.first + BigInt(this.count);
    if (this.count === 0 || from < this.first || from >= end) return undefined;
    const out: ChangeRecord[] = [];
    for (let rev = from; rev < end && out.length < limit; rev++) {
      out.push(this.ring[Number(rev % BigInt(this.capacity))] as ChangeRecord);
    }
    return out;
  }

  /** Forgets records older than `revision` (compaction removed them from storage). */
  dropBefore(revision: bigint): void {
    if (this.count === 0 || revision <= this.first) return;
    const drop = revision - this.first;
    if (drop >= BigInt(this.count)) this.count = 0;
    else {
      this.count -= Number(drop);
      this.first = revision;
    }
  }

  /** Forgets everything, and lets go of the records. */
  clear(): void {
    if (this.count === 0) return;
    this.count = 0;
    this.ring.fill(undefined);
  }
}

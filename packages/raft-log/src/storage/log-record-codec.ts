// Binary records of the RocksDB log store. Fixed and versioned: every value starts with
// a record-format byte (currently 1); a reader refuses versions it does not know.
//
// Keys (all in the store's column family), `G` = varint length + UTF-8 of the group id:
//   G 0x01                 hard state
//   G 0x02                 snapshot metadata
//   G 0x03                 snapshot data (raw bytes, no version byte: opaque to the store)
//   G 0x04                 log floor: index and term of the last compacted entry
//   G 0x05                 erase in progress: from an erase's synced write until its range
//                          deletion of the group's entries is done (redone at open)
//   G 0x10 <u64 BE index>  entry (big-endian so entries sort by index)
//
// Values (varints are minimal unsigned LEB128):
//   hard state     01 term vote commit
//   snapshot meta  01 index term confState
//   log floor      01 index term
//   erase mark     01
//   entry          01 term type(u8: 0 normal, 1 conf_change) data(rest of the value)
//   confState      voters learners votersOutgoing learnersNext (each: count, ids) autoLeave(u8 0|1)

import { ByteReader } from "../codec/byte-reader.js";
import { ByteWriter, encodeUtf8 } from "../codec/byte-writer.js";
import { RaftError } from "../core/raft-error.js";
import type { ConfState, Entry, EntryType, HardState, SnapshotMetadata } from "../types.js";

/** Version byte at the start of every record value. */
export const LOG_RECORD_VERSION = 1;

/** Record types (the byte after the group id in a key). */
export const RecordType = {
  hardState: 0x01,
  snapshotMeta: 0x02,
  snapshotData: 0x03,
  floor: 0x04,
  erasing: 0x05,
  entry: 0x10,
} as const;

/** Key prefix shared by every record of `groupId`. */
export function groupPrefix(groupId: string): Uint8Array {
  return new ByteWriter().bytes(encodeUtf8(groupId)).finish();
}

/** Key of a non-entry record of a group. */
export function recordKey(prefix: Uint8Array, type: number): Uint8Array {
  const k = new Uint8Array(prefix.length + 1);
  k.set(prefix);
  k[prefix.length] = type;
  return k;
}

/**
 * Key of the entry at `index` (a safe integer) of a group. The index's eight big-endian
 * bytes are written from two 32-bit halves: a DataView's `setBigUint64` cost most of the
 * key (one per entry, on every replica).
 */
export function entryKey(prefix: Uint8Array, index: number): Uint8Array {
  const at = prefix.length;
  const k = new Uint8Array(at + 9);
  k.set(prefix);
  k[at] = RecordType.entry;
  const hi = Math.floor(index / 0x1_0000_0000);
  const lo = index >>> 0;
  k[at + 1] = hi >>> 24;
  k[at + 2] = (hi >>> 16) & 0xff;
  k[at + 3] = (hi >>> 8) & 0xff;
  k[at + 4] = hi & 0xff;
  k[at + 5] = lo >>> 24;
  k[at + 6] = (lo >>> 16) & 0xff;
  k[at + 7] = (lo >>> 8) & 0xff;
  k[at + 8] = lo & 0xff;
  return k;
}

/** Index named by an entry key (the last 8 bytes). */
export function entryKeyIndex(key: Uint8Array): number {
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  return view.getUint32(key.length - 8) * 0x1_0000_0000 + view.getUint32(key.length - 4);
}

function header(r: ByteReader, what: string): void {
  const v = r.u8();
  if (v !== LOG_RECORD_VERSION) {
    throw new RaftError("unknown_version", `${what} record version ${v}`, { offset: 0 });
  }
}

const TYPE_CODES: Readonly<Record<EntryType, number>> = { normal: 0, conf_change: 1 };

/** Encodes an entry value (the index lives in the key). */
export function encodeEntryValue(e: Entry): Uint8Array {
  return new ByteWriter()
    .u8(LOG_RECORD_VERSION)
    .varint(e.term)
    .u8(TYPE_CODES[e.type])
    .raw(e.data)
    .finish();
}

/** Decodes an entry value stored under `index`. */
export function decodeEntryValue(index: number, bytes: Uint8Array): Entry {
  const r = new ByteReader(bytes);
  header(r, "entry");
  const term = r.varint();
  const t = r.u8();
  const type: EntryType | undefined = t === 0 ? "normal" : t === 1 ? "conf_change" : undefined;
  if (type === undefined) throw new RaftError("unknown_tag", `entry type ${t}`, { offset: r.pos });
  // Copy into a plain Uint8Array: the binding hands out Buffers (whose slice() is a view).
  return { index, term, type, data: new Uint8Array(r.raw(r.remaining)) };
}

/** Encodes a hard state. */
export function encodeHardState(h: HardState): Uint8Array {
  return new ByteWriter()
    .u8(LOG_RECORD_VERSION)
    .varint(h.term)
    .varint(h.vote)
    .varint(h.commit)
    .finish();
}

/** Decodes a hard state. */
export function decodeHardState(bytes: Uint8Array): HardState {
  const r = new ByteReader(bytes);
  header(r, "hard state");
  const h = { term: r.varint(), vote: r.varint(), commit: r.varint() };
  r.end();
  return h;
}

/** Encodes an (index, term) pair: the log floor. */
export function encodeFloor(index: number, term: number): Uint8Array {
  return new ByteWriter().u8(LOG_RECORD_VERSION).varint(index).varint(term).finish();
}

/** Decodes the log floor. */
export function decodeFloor(bytes: Uint8Array): { index: number; term: number } {
  const r = new ByteReader(bytes);
  header(r, "log floor");
  const f = { index: r.varint(), term: r.varint() };
  r.end();
  return f;
}

function writeIds(w: ByteWriter, ids: readonly number[]): void {
  w.varint(ids.length);
  for (const id of ids) w.varint(id);
}

function readIds(r: ByteReader): number[] {
  const n = r.varint();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(r.varint());
  return out;
}

/** Encodes snapshot metadata. */
export function encodeSnapshotMeta(m: SnapshotMetadata): Uint8Array {
  const w = new ByteWriter().u8(LOG_RECORD_VERSION).varint(m.index).varint(m.term);
  const c = m.confState;
  writeIds(w, c.voters);
  writeIds(w, c.learners);
  writeIds(w, c.votersOutgoing);
  writeIds(w, c.learnersNext);
  w.u8(c.autoLeave ? 1 : 0);
  return w.finish();
}

/** Decodes snapshot metadata. */
export function decodeSnapshotMeta(bytes: Uint8Array): SnapshotMetadata {
  const r = new ByteReader(bytes);
  header(r, "snapshot metadata");
  const index = r.varint();
  const term = r.varint();
  const voters = readIds(r);
  const learners = readIds(r);
  const votersOutgoing = readIds(r);
  const learnersNext = readIds(r);
  const flag = r.u8();
  if (flag > 1) throw new RaftError("unknown_flags", `autoLeave byte ${flag}`, { offset: r.pos });
  r.end();
  const confState: ConfState = {
    voters,
    learners,
    votersOutgoing,
    learnersNext,
    autoLeave: flag === 1,
  };
  return { index, term, confState };
}

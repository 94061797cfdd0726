// A whole shard as bytes: every record of its three keyspaces (objects, blobs, system —
// counters and the applied log index included). A Raft shard's snapshot is this; a replica
// that fell behind a compacted log installs it a window at a time (replaceShard).
import { concatBytes } from "./bytes.js";
import type { Keyspace, KvShard, KvWriteOp, KvWriteOptions } from "./kv.js";
import { StoreError } from "./store-error.js";

const MAGIC = new TextEncoder().encode("ODGMSHARD");
const FORMAT_VERSION = 1;
const KEYSPACES: readonly Keyspace[] = ["objects", "blobs", "system"];
const PAGE = 1024;

/** One record of a shard. */
export interface ShardRecord {
  readonly keyspace: Keyspace;
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

/**
 * A reader of every record of `kv`, a page of records at a time (so a large shard need not
 * be held whole). The three keyspaces' iterators are opened now, together, each a
 * point-in-time view: call it while no write of the shard is in flight, and writes after it
 * are not in what the reader yields, however long the reading takes. The pages concatenated
 * are the layout: `ODGMSHARD` version(u8), then per record keyspace(u8) keyLen(u32 LE) key
 * valueLen(u32 LE) value, then the record count (u32 LE). Read it once.
 */
export function openShardState(kv: KvShard): () => AsyncGenerator<Uint8Array> {
  const iterators: ReturnType<KvShard["iterator"]>[] = [];
  try {
    for (const ks of KEYSPACES) iterators.push(kv.iterator(ks));
  } catch (err) {
    for (const it of iterators) void it.close();
    throw err;
  }
  return async function* read() {
    yield concatBytes([MAGIC, Uint8Array.of(FORMAT_VERSION)]);
    let count = 0;
    try {
      for (const [i, it] of iterators.entries()) {
        for (;;) {
          const rows = await it.next(PAGE);
          if (rows.length === 0) break;
          let size = 0;
          for (const [key, value] of rows) size += 9 + key.length + value.length;
          const page = new Uint8Array(size);
          const view = new DataView(page.buffer);
          let at = 0;
          for (const [key, value] of rows) {
            page[at] = i;
            view.setUint32(at + 1, key.length, true);
            page.set(key, at + 5);
            at += 5 + key.length;
            view.setUint32(at, value.length, true);
            page.set(value, at + 4);
            at += 4 + value.length;
          }
          count += rows.length;
          yield page;
        }
      }
    } finally {
      for (const it of iterators) await it.close();
    }
    const tail = new Uint8Array(4);
    new DataView(tail.buffer).setUint32(0, count, true);
    yield tail;
  };
}

/** Every page of a shard reader, as one buffer. */
export async function readAllBytes(pages: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const p of pages) parts.push(p);
  return concatBytes(parts);
}

/**
 * A shard's bytes read a range at a time: a `Uint8Array`, or a file read on demand (a Raft
 * snapshot received into one), so that a shard larger than memory can be installed.
 */
export interface ShardStateBytes {
  readonly byteLength: number;
  /** Bytes [start, end); may throw (a read error). */
  subarray(start: number, end: number): Uint8Array;
}

/** The state of an empty shard. */
export const EMPTY_SHARD_STATE: Uint8Array = concatBytes([
  MAGIC,
  Uint8Array.of(FORMAT_VERSION),
  new Uint8Array(4),
]);

/** Bytes of {@link ShardStateBytes} read per step when a shard is parsed. */
const WINDOW = 1 << 20;

/**
 * Parses {@link openShardState}'s bytes a window of about 1 MiB at a time, handing `each`
 * the records of each window in order (their keys and values are views of that window), or
 * throws `invalid_argument` naming the problem. The trailing record count is checked only
 * at the end: parse once with an `each` that keeps nothing to check the whole before
 * writing anything.
 */
export async function forEachShardRecords(
  state: ShardStateBytes,
  each: (records: ShardRecord[]) => void | Promise<void>,
): Promise<void> {
  const bad = (what: string): StoreError =>
    new StoreError("invalid_argument", `shard state is malformed: ${what}`);
  if (
    typeof state !== "object" ||
    state === null ||
    typeof state.byteLength !== "number" ||
    typeof state.subarray !== "function"
  ) {
    throw bad("not bytes");
  }
  const total = state.byteLength;
  const read = (from: number, to: number): { bytes: Uint8Array; view: DataView } => {
    let bytes = state.subarray(from, to);
    // Plain Uint8Arrays out, whatever view (a Buffer, say) came in.
    if (Buffer.isBuffer(bytes))
      bytes = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
  };
  if (total < MAGIC.length + 5) throw bad("no header");
  const head = read(0, MAGIC.length + 1).bytes;
  if (!MAGIC.every((b, i) => head[i] === b)) throw bad("no header");
  if (head[MAGIC.length] !== FORMAT_VERSION) throw bad(`unknown format ${head[MAGIC.length]}`);
  const end = total - 4;
  let at = MAGIC.length + 1;
  let count = 0;
  while (at < end) {
    let window = parseWindow(read(at, Math.min(end, at + WINDOW)), at, bad);
    if (window.records.length === 0) {
      // One record larger than the window: read exactly it.
      if (at + 5 > end) throw bad(`truncated record at byte ${at}`);
      const keyLen = read(at + 1, at + 5).view.getUint32(0, true);
      if (at + 9 + keyLen > end) throw bad(`truncated key at byte ${at + 5}`);
      const valueLen = read(at + 5 + keyLen, at + 9 + keyLen).view.getUint32(0, true);
      if (at + 9 + keyLen + valueLen > end) throw bad(`truncated value at byte ${at + 9 + keyLen}`);
      window = parseWindow(read(at, at + 9 + keyLen + valueLen), at, bad);
    }
    at += window.consumed;
    count += window.records.length;
    await each(window.records);
  }
  if (read(end, total).view.getUint32(0, true) !== count) throw bad("record count does not match");
}

/**
 * The whole records at the start of `bytes` (up to one that does not fit) and the bytes
 * they take. `base` is where `bytes` starts in the state (for error messages).
 */
function parseWindow(
  { bytes, view }: { bytes: Uint8Array; view: DataView },
  base: number,
  bad: (what: string) => StoreError,
): { records: ShardRecord[]; consumed: number } {
  const records: ShardRecord[] = [];
  let at = 0;
  while (at + 5 <= bytes.length) {
    const keyspace = KEYSPACES[bytes[at] as number];
    if (keyspace === undefined) throw bad(`unknown keyspace ${bytes[at]} at byte ${base + at}`);
    const keyLen = view.getUint32(at + 1, true);
    if (at + 9 + keyLen > bytes.length) break;
    const next = at + 9 + keyLen + view.getUint32(at + 5 + keyLen, true);
    if (next > bytes.length) break;
    // Views, not copies: every engine copies what it writes.
    records.push({
      keyspace,
      key: bytes.subarray(at + 5, at + 5 + keyLen),
      value: bytes.subarray(at + 9 + keyLen, next),
    });
    at = next;
  }
  return { records, consumed: at };
}

/**
 * Replaces every record of `kv` by those of `state`, then writes `last` (with `options`).
 * The whole state is parsed first, so malformed bytes change nothing. Then it is written in
 * several writes (a page of deletes or a window of records each), so a shard larger than
 * memory can be installed; `last` goes in the final one. Not atomic: a failure or crash in
 * between leaves a mix of old and new records (the old applied index gone with the first
 * write), which importing the same state again repairs.
 */
export async function replaceShard(
  kv: KvShard,
  state: ShardStateBytes,
  last: KvWriteOp[],
  options: KvWriteOptions,
): Promise<void> {
  await forEachShardRecords(state, () => undefined);
  const unsynced = { ...options, sync: false };
  // The system keyspace (the applied index among it) goes first.
  for (const keyspace of [...KEYSPACES].reverse()) {
    const it = kv.iterator(keyspace, { keysOnly: true });
    try {
      for (;;) {
        const rows = await it.next(PAGE);
        if (rows.length === 0) break;
        await kv.write(
          rows.map(([key]) => ({ type: "del", keyspace, key })),
          unsynced,
        );
      }
    } finally {
      await it.close();
    }
  }
  await forEachShardRecords(state, (records) =>
    records.length === 0
      ? undefined
      : kv.write(
          records.map((r) => ({ type: "put", keyspace: r.keyspace, key: r.key, value: r.value })),
          unsynced,
        ),
  );
  await kv.write(last, options);
}

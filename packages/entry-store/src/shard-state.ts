// A whole shard as bytes: every record of its three keyspaces (objects, blobs, system —
// counters and the applied log index included). A Raft shard's snapshot is this; a replica
// that fell behind a compacted log installs it in one atomic write.
import { concatBytes } from "./bytes.js";
import type { Keyspace, KvShard, KvWriteOp } from "./kv.js";
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
 * Parses {@link openShardState}'s bytes, or throws `invalid_argument` naming the problem.
 * The records' keys and values are views of `bytes`.
 */
export function parseShardState(bytes: Uint8Array): ShardRecord[] {
  const bad = (what: string): StoreError =>
    new StoreError("invalid_argument", `shard state is malformed: ${what}`);
  if (!(bytes instanceof Uint8Array)) throw bad("not bytes");
  // Plain Uint8Arrays out, whatever view (a Buffer, say) came in.
  if (Buffer.isBuffer(bytes))
    bytes = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < MAGIC.length + 5 || !MAGIC.every((b, i) => bytes[i] === b))
    throw bad("no header");
  if (bytes[MAGIC.length] !== FORMAT_VERSION) throw bad(`unknown format ${bytes[MAGIC.length]}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length - 4;
  const out: ShardRecord[] = [];
  let at = MAGIC.length + 1;
  while (at < end) {
    if (at + 5 > end) throw bad(`truncated record at byte ${at}`);
    const keyspace = KEYSPACES[bytes[at] as number];
    if (keyspace === undefined) throw bad(`unknown keyspace ${bytes[at]} at byte ${at}`);
    const keyLen = view.getUint32(at + 1, true);
    at += 5;
    if (at + keyLen + 4 > end) throw bad(`truncated key at byte ${at}`);
    // Views, not copies: the records are written at once (every engine copies what it
    // writes), and a copy would hold the shard in memory a second time.
    const key = bytes.subarray(at, at + keyLen);
    at += keyLen;
    const valueLen = view.getUint32(at, true);
    at += 4;
    if (at + valueLen > end) throw bad(`truncated value at byte ${at}`);
    out.push({ keyspace, key, value: bytes.subarray(at, at + valueLen) });
    at += valueLen;
  }
  if (at !== end) throw bad("trailing bytes");
  if (view.getUint32(end, true) !== out.length) throw bad("record count does not match");
  return out;
}

/** The writes that replace every record of `kv` by `records` (one atomic write). */
export async function replaceShardWrites(
  kv: KvShard,
  records: readonly ShardRecord[],
): Promise<KvWriteOp[]> {
  const writes: KvWriteOp[] = [];
  for (const keyspace of KEYSPACES) {
    const it = kv.iterator(keyspace, { keysOnly: true });
    try {
      for (;;) {
        const rows = await it.next(PAGE);
        if (rows.length === 0) break;
        for (const [key] of rows) writes.push({ type: "del", keyspace, key });
      }
    } finally {
      await it.close();
    }
  }
  for (const r of records)
    writes.push({ type: "put", keyspace: r.keyspace, key: r.key, value: r.value });
  return writes;
}

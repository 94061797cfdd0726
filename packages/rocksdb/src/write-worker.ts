// The worker thread of a group-commit writer: it opens the SAME RocksDB instance through
// the binding's native handle (no second open, no second lock) and writes the batches the
// main thread sends, synchronously here, so the event loop never waits for an fsync.
// Only erasable TypeScript and no relative imports: Node runs this file directly, from
// `src/` (type stripping) and from `dist/`.
//
// Protocol: workerData { handle, modulePath, columns }.
//   in:  { id, sync, buf: ArrayBuffer (transferred) }; buf = repeated records
//        op(u8: 1 put, 2 del) column(u8, index into columns) keyLen(u32 LE) key
//        [valueLen(u32 LE) value]; or one range deletion alone:
//        op(u8: 3) column(u8) gteLen(u32 LE) gte ltLen(u32 LE) lt
//   out: { ready: true } once, then { id, ms } (the write's time on this thread), { id }
//        (a range deletion) or { id, error } per batch.
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

// The binding's chained batch, through its synchronous internals: the public `put`/`del`
// also record every operation (for abstract-level's `batch` event) and only the public,
// asynchronous `write`/`close` detach the batch from the database, so a batch written with
// `_writeSync`/`_closeSync` after public puts stays referenced by the database forever,
// with every key and value of it (1.7 KB per write of RSS, without bound, measured).
interface Batch {
  _put(key: Uint8Array, value: Uint8Array, options: { column: unknown }): void;
  _del(key: Uint8Array, options: { column: unknown }): void;
  _writeSync(options: { sync: boolean }): void;
  _closeSync(): void;
  _clear(): void;
}
interface Db {
  readonly columns: Record<string, unknown>;
  open(options: object): Promise<void>;
  batch(): Batch;
  /** The binding's range removal: one `DeleteRange`, synchronous here. */
  _clear(options: { column: unknown; gte: Uint8Array; lt: Uint8Array }): Promise<void>;
  /** abstract-level: forget a resource the database would close with itself. */
  detachResource(resource: object): void;
}
interface Data {
  readonly handle: bigint;
  readonly modulePath: string;
  readonly columns: readonly string[];
}

/**
 * A batch that held more than this is replaced, not cleared (see the message handler); the
 * writer's own bound for its calling thread (this file takes no relative imports).
 */
const REUSED_BATCH_MAX_BYTES = 1024 * 1024;

const data = workerData as Data;
const port = parentPort;
if (port === null) throw new Error("write-worker runs as a worker thread only");
const { RocksLevel } = createRequire(import.meta.url)(data.modulePath) as {
  RocksLevel: new (handle: bigint, options: object) => Db;
};
const db = new RocksLevel(data.handle, { keyEncoding: "buffer", valueEncoding: "buffer" });

db.open({}).then(
  () => {
    const columns = data.columns.map((name) => ({ column: db.columns[name] }));
    // One batch for the writes, cleared after each (the database closes it with itself);
    // a new one after a large write, whose buffer the cleared batch would keep.
    let batch = db.batch();
    port.on("message", (m: { id: number; sync: boolean; buf: ArrayBuffer }) => {
      const buf = Buffer.from(m.buf);
      try {
        if (buf[0] === 3) {
          const gl = buf.readUInt32LE(2);
          const gte = buf.subarray(6, 6 + gl);
          const lt = buf.subarray(10 + gl, 10 + gl + buf.readUInt32LE(6 + gl));
          const opts = columns[buf[1] as number] as { column: unknown };
          // Without a `limit`, the binding's DeleteRange runs within the call; its outcome
          // comes on the next tick, before the next message.
          db._clear({ column: opts.column, gte, lt }).then(
            () => port.postMessage({ id: m.id }),
            (e: unknown) =>
              port.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) }),
          );
          return;
        }
        let at = 0;
        while (at < buf.length) {
          const op = buf[at] as number;
          const opts = columns[buf[at + 1] as number] as { column: unknown };
          const kl = buf.readUInt32LE(at + 2);
          const key = buf.subarray(at + 6, at + 6 + kl);
          at += 6 + kl;
          if (op === 2) {
            batch._del(key, opts);
          } else {
            const vl = buf.readUInt32LE(at);
            batch._put(key, buf.subarray(at + 4, at + 4 + vl), opts);
            at += 4 + vl;
          }
        }
        const start = performance.now();
        batch._writeSync({ sync: m.sync });
        port.postMessage({ id: m.id, ms: performance.now() - start });
      } catch (e) {
        port.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
      } finally {
        if (buf.length <= REUSED_BATCH_MAX_BYTES) batch._clear();
        else {
          batch._closeSync();
          db.detachResource(batch);
          batch = db.batch();
        }
      }
    });
    port.postMessage({ ready: true });
  },
  (e: unknown) => port.postMessage({ fatal: String((e as Error | undefined)?.stack ?? e) }),
);

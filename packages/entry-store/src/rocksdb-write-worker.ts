// Source of the worker thread that performs the RocksDB engine's writes when
// `writeThread: "worker"` is chosen: `@nxtedition/rocksdb` writes a WriteBatch
// synchronously on the calling thread, so a synced write would otherwise block the event
// loop for one WAL sync. Evaluated with `new Worker(source, { eval: true })`, so it runs
// the same from TypeScript sources and from `dist/`.
//
// The worker opens the *same* RocksDB instance through the binding's native handle (no
// second open, no second lock) and never closes it; the engine terminates the worker
// before closing the database. Protocol:
//   in:  { id, sync, buf: ArrayBuffer (transferred) }, buf = repeated records
//        op(u8: 1 put, 2 del) column(u8 index into workerData.columns) keyLen(u32 LE) key
//        [valueLen(u32 LE) value]
//   out: { ready: true } once, then { id } or { id, error } per message.

/** JavaScript source of the write worker. */
export const WRITE_WORKER_SOURCE: string = `
const { parentPort, workerData } = require("node:worker_threads");
const { RocksLevel } = require(workerData.modulePath);
const db = new RocksLevel(workerData.handle, { keyEncoding: "buffer", valueEncoding: "buffer" });
db.open({}).then(
  () => {
    const columns = workerData.columns.map((name) => ({ column: db.columns[name] }));
    parentPort.on("message", (m) => {
      try {
        const batch = db.batch();
        const buf = Buffer.from(m.buf);
        let at = 0;
        while (at < buf.length) {
          const op = buf[at];
          const opts = columns[buf[at + 1]];
          const kl = buf.readUInt32LE(at + 2);
          const key = buf.subarray(at + 6, at + 6 + kl);
          at += 6 + kl;
          if (op === 2) {
            batch.del(key, opts);
          } else {
            const vl = buf.readUInt32LE(at);
            batch.put(key, buf.subarray(at + 4, at + 4 + vl), opts);
            at += 4 + vl;
          }
        }
        batch._writeSync({ sync: m.sync });
        batch._closeSync();
        parentPort.postMessage({ id: m.id });
      } catch (e) {
        parentPort.postMessage({ id: m.id, error: String((e && e.stack) || e) });
      }
    });
    parentPort.postMessage({ ready: true });
  },
  (e) => parentPort.postMessage({ fatal: String((e && e.stack) || e) }),
);
`;

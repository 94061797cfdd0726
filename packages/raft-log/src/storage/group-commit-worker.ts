// Source of the worker thread that performs the group committer's synced writes, so the
// fsync does not block the JS thread of the Raft groups (`@nxtedition/rocksdb` writes
// batches synchronously on the calling thread). Evaluated with `new Worker(src, { eval })`
// so it runs the same from TypeScript sources (tests) and from `dist/`.
//
// The worker opens the *same* RocksDB instance through the binding's native handle (no
// second open, no second lock); it never closes it. Protocol:
//   in:  { id, buf: ArrayBuffer (transferred) } holding the batch as repeated records
//        op(u8: 1 put, 2 del) keyLen(u32 LE) key [valueLen(u32 LE) value]
//   out: { id } on success, { id, error } on failure; first message { ready: true }.

/** JavaScript source of the commit worker. */
export const GROUP_COMMIT_WORKER_SOURCE: string = `
const { parentPort, workerData } = require("node:worker_threads");
const { RocksLevel } = require(workerData.modulePath);
const db = new RocksLevel(workerData.handle, { keyEncoding: "buffer", valueEncoding: "buffer" });
db.open({}).then(
  () => {
    const column = workerData.column === undefined ? undefined : db.columns[workerData.column];
    const opts = column === undefined ? {} : { column };
    parentPort.on("message", (m) => {
      try {
        const batch = db.batch();
        const buf = Buffer.from(m.buf);
        let at = 0;
        while (at < buf.length) {
          const op = buf[at];
          const kl = buf.readUInt32LE(at + 1);
          const key = buf.subarray(at + 5, at + 5 + kl);
          at += 5 + kl;
          if (op === 2) {
            batch.del(key, opts);
          } else {
            const vl = buf.readUInt32LE(at);
            batch.put(key, buf.subarray(at + 4, at + 4 + vl), opts);
            at += 4 + vl;
          }
        }
        batch._writeSync({ sync: true });
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

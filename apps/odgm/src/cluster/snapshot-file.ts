// A snapshot a leader built for its followers, kept in a file: written a page at a time
// from the state machine's reader, read back a chunk at a time while it is sent (raft-log's
// SnapshotBytes), so a shard is never held whole in the leader's memory. Removed once no
// follower is being sent it.

import { closeSync, openSync, readSync, rmSync, write } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { SnapshotBytes } from "@oprc/raft-log";

const writeAsync = promisify(write);

export class SnapshotFile implements SnapshotBytes {
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly fd: number,
    readonly byteLength: number,
  ) {}

  /** Writes `pages` to a new file in `dir` (named after `name`, made unique). */
  static async write(
    dir: string,
    name: string,
    pages: AsyncIterable<Uint8Array>,
  ): Promise<SnapshotFile> {
    const path = join(
      dir,
      `${encodeURIComponent(name)}-${Date.now()}-${Math.random().toString(36).slice(2)}.snap`,
    );
    const fd = openSync(path, "wx+");
    let size = 0;
    try {
      for await (const page of pages) {
        for (let done = 0; done < page.byteLength; ) {
          const { bytesWritten } = await writeAsync(fd, page, done, page.byteLength - done, size);
          done += bytesWritten;
          size += bytesWritten;
        }
      }
    } catch (err) {
      closeSync(fd);
      rmSync(path, { force: true });
      throw err;
    }
    return new SnapshotFile(path, fd, size);
  }

  /** Bytes [start, end) read from the file (throws once removed, or on a short read). */
  subarray(start: number, end: number): Uint8Array {
    // (A closed descriptor's number may already belong to another file.)
    if (this.closed) throw new Error(`snapshot file ${this.path} was removed`);
    const len = Math.max(0, Math.min(end, this.byteLength) - start);
    const out = new Uint8Array(len);
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, out, done, len - done, start + done);
      if (n === 0) throw new Error(`snapshot file ${this.path} ends before byte ${start + done}`);
      done += n;
    }
    return out;
  }

  /** Closes and deletes the file (idempotent). */
  remove(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
    rmSync(this.path, { force: true });
  }
}

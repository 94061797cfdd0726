// A snapshot kept in a file, so that a shard is never held whole in memory: on a leader,
// one built for its followers (written a page at a time from the state machine's reader,
// read back a chunk at a time while it is sent, removed once no follower is being sent it);
// on a follower, one received from the leader (each chunk appended as it arrives, then read
// a window at a time while it is installed). Both are raft-log's SnapshotBytes.

import {
  closeSync,
  fdatasync,
  fstatSync,
  openSync,
  readSync,
  rename,
  rmSync,
  writeSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { SnapshotBytes, SnapshotSink } from "@oprc/raft-log";

const fdatasyncAsync = promisify(fdatasync);
const renameAsync = promisify(rename);

/** Makes the entries of `dir` (a file created, renamed or removed in it) durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A {@link SnapshotSink} whose bytes are a {@link SnapshotFile}. */
export interface SnapshotFileSink extends SnapshotSink {
  finish(): SnapshotFile;
}

export class SnapshotFile implements SnapshotBytes {
  private closed = false;

  private constructor(
    private where: string,
    private readonly fd: number,
    readonly byteLength: number,
  ) {}

  /** Where the file is now. */
  get path(): string {
    return this.where;
  }

  /**
   * A new file at `path` that receives a snapshot's bytes in order (raft-log's
   * SnapshotSink): `finish` hands back the file, `discard` deletes it.
   */
  static receive(path: string): SnapshotFileSink {
    const fd = openSync(path, "wx+");
    let size = 0;
    let open = true;
    return {
      append(bytes) {
        for (let done = 0; done < bytes.byteLength; ) {
          const n = writeSync(fd, bytes, done, bytes.byteLength - done, size);
          done += n;
          size += n;
        }
      },
      finish() {
        open = false;
        return new SnapshotFile(path, fd, size);
      },
      discard() {
        if (!open) return;
        open = false;
        closeSync(fd);
        rmSync(path, { force: true });
      },
    };
  }

  /** An existing file, to read (a snapshot whose install was cut short). */
  static open(path: string): SnapshotFile {
    const fd = openSync(path, "r");
    return new SnapshotFile(path, fd, fstatSync(fd).size);
  }

  /**
   * Makes the file's bytes durable, then moves it to `path` (in the same file system) and
   * makes that durable too.
   */
  async persistAs(path: string): Promise<void> {
    await fdatasyncAsync(this.fd);
    await renameAsync(this.where, path);
    this.where = path;
    await syncDir(dirname(path));
  }

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
    const sink = SnapshotFile.receive(path);
    try {
      for await (const page of pages) sink.append(page);
    } catch (err) {
      sink.discard();
      throw err;
    }
    return sink.finish();
  }

  /** Bytes [start, end) read from the file (throws once removed, or on a short read). */
  subarray(start: number, end: number): Uint8Array {
    // (A closed descriptor's number may already belong to another file.)
    if (this.closed) throw new Error(`snapshot file ${this.where} was removed`);
    const len = Math.max(0, Math.min(end, this.byteLength) - start);
    const out = new Uint8Array(len);
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, out, done, len - done, start + done);
      if (n === 0) throw new Error(`snapshot file ${this.where} ends before byte ${start + done}`);
      done += n;
    }
    return out;
  }

  /** Closes and deletes the file (idempotent). */
  remove(): void {
    if (this.closed) return;
    this.close();
    rmSync(this.where, { force: true });
  }

  /** Closes the file, leaving it in place (idempotent). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

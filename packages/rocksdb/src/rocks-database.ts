import { mkdir } from "node:fs/promises";
import { createGroupCommitWriter, type GroupCommitWriter } from "./group-commit-writer.js";
import {
  bindingModulePath,
  type ColumnHandle,
  loadRocksBinding,
  type RocksLevelConstructor,
  type RocksLevelLike,
} from "./rocks-binding.js";
import { RocksError } from "./rocks-error.js";

/** Options of {@link openRocksDatabase}. */
export interface OpenRocksDatabaseOptions {
  /** Directory of the database. */
  readonly location: string;
  /** Column families besides `default` (RocksDB needs every existing one named at open). */
  readonly columns: readonly string[];
  /** Create the database when missing. Default true. */
  readonly createIfMissing?: boolean;
  /**
   * Extra options for the binding's `open` (e.g. `{ parallelism: 2 }`). The WAL is written
   * uncompressed unless `walCompression: true` is given here: the binding's default, ZSTD,
   * compresses every write's WAL record on the writing thread, and for records of a few
   * hundred bytes (a Raft batch, an applied write) that cost 2–2.5 % of a three-node
   * cluster's CPU under write load (perf, 2026-11-27) for little space saved.
   */
  readonly openOptions?: Record<string, unknown>;
  /** `RocksLevel` to use instead of importing `@nxtedition/rocksdb` (the writer then runs on the main thread). */
  readonly binding?: RocksLevelConstructor;
  /** Where synced writes run: `"worker"` (default with the package's own binding) or `"main"`. */
  readonly writeThread?: "worker" | "main";
}

/** An open database with its one writer. */
export interface RocksDatabase {
  readonly location: string;
  /** The binding's database object, for reads and iterators. */
  readonly db: RocksLevelLike;
  /** The handle of a column family named at open. */
  column(name: string): ColumnHandle;
  /** The one group-commit writer of this database. */
  readonly writer: GroupCommitWriter;
  /** Closes the writer (after its queued calls), then the database. Idempotent. */
  close(): Promise<void>;
}

/**
 * Classifies an error of RocksDB's `open`: a lock held elsewhere is `locked` only when
 * RocksDB says the LOCK file could not be locked — not whenever the word appears, since
 * "…/LOCK: Read-only file system" is a read-only directory and "Permission denied" a
 * permissions problem.
 */
export function classifyOpenError(err: unknown, location: string): RocksError {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  const text =
    `${err instanceof Error ? err.message : String(err)} ${cause instanceof Error ? cause.message : ""}`.trim();
  if (/read-only file system|EROFS/i.test(text)) {
    return new RocksError(
      "read_only",
      `database ${location} is on a read-only file system (${text})`,
      { cause: err },
    );
  }
  if (/permission denied|EACCES|EPERM/i.test(text)) {
    return new RocksError(
      "permission_denied",
      `database ${location} is not accessible to this user (${text})`,
      { cause: err },
    );
  }
  if (
    /lock hold by current process|Resource temporarily unavailable|While lock file|unable to lock|lock file/i.test(
      text,
    )
  ) {
    return new RocksError(
      "locked",
      `database ${location} is in use by another process or open (${text})`,
      { cause: err },
    );
  }
  return new RocksError("io", `cannot open database ${location}: ${text}`, { cause: err });
}

/**
 * Opens (creating if needed) a RocksDB database with `columns` and its group-commit writer.
 *
 * @example
 * ```ts
 * const database = await openRocksDatabase({ location: "./data/db", columns: ["objects"] });
 * await database.writer.write([{ column: "objects", type: "put", key, value }], { sync: true });
 * await database.close();
 * ```
 */
export async function openRocksDatabase(o: OpenRocksDatabaseOptions): Promise<RocksDatabase> {
  const RocksLevel = o.binding ?? (await loadRocksBinding());
  if (o.createIfMissing !== false) {
    try {
      await mkdir(o.location, { recursive: true });
    } catch (err) {
      throw classifyOpenError(err, o.location);
    }
  }
  let db: RocksLevelLike;
  try {
    db = new RocksLevel(o.location, { keyEncoding: "buffer", valueEncoding: "buffer" });
    const columns: Record<string, object> = { default: {} };
    for (const c of o.columns) columns[c] = {};
    await db.open({
      walCompression: false,
      ...o.openOptions,
      createIfMissing: o.createIfMissing !== false,
      columns,
    });
  } catch (err) {
    throw classifyOpenError(err, o.location);
  }
  const modulePath = o.binding === undefined ? bindingModulePath() : undefined;
  const handle = (db as { handle?: unknown }).handle;
  const access =
    modulePath !== undefined && typeof handle === "bigint" && o.writeThread !== "main"
      ? { handle, modulePath }
      : undefined;
  let writer: GroupCommitWriter;
  try {
    writer = await createGroupCommitWriter({
      db,
      columns: o.columns,
      thread: access === undefined ? "main" : "worker",
      ...(access === undefined ? {} : { access }),
    });
  } catch (err) {
    await db.close().catch(() => undefined);
    throw RocksError.from(err);
  }
  let closing: Promise<void> | undefined;
  return {
    location: o.location,
    db,
    column(name) {
      const c = db.columns[name];
      if (c === undefined) throw new RocksError("io", `column family ${name} was not opened`);
      return c;
    },
    writer,
    close() {
      closing ??= (async () => {
        await writer.close();
        try {
          await db.close();
        } catch (err) {
          throw RocksError.from(err);
        }
      })();
      return closing;
    },
  };
}

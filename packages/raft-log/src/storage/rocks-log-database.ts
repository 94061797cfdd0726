import {
  bindingModulePath,
  createGroupCommitWriter,
  type GroupCommitWriter,
  loadRocksBinding,
  openRocksDatabase,
  type RocksLevelConstructor,
  type RocksLevelLike,
} from "@oprc/rocksdb";
import { RaftError } from "../core/raft-error.js";

/** The `RocksLevel` parts the log store uses (from `@oprc/rocksdb`), plus `iterator().all()`. */
export type RocksDbLike = Omit<RocksLevelLike, "iterator"> & {
  iterator(options: Record<string, unknown>): { all(): Promise<[Uint8Array, Uint8Array][]> };
};

export type { RocksLevelConstructor };

/** One key write inside a batch (in the log's column family). */
export type RocksWrite =
  | { readonly type: "put"; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly type: "del"; readonly key: Uint8Array };

/** A RocksDB database (one column family of it) holding the logs of many Raft groups. */
export interface RocksLogDatabase {
  readonly db: RocksDbLike;
  /** Column family handle the log records live in (`undefined` = the default family). */
  readonly column: unknown;
  /** The column family's name. */
  readonly columnName: string;
  /** Every column family of the database (a writer may name any). */
  readonly columns: readonly string[];
  /** What a worker-thread writer needs to reach this open database, when it can. */
  readonly workerAccess: { readonly handle: bigint; readonly modulePath: string } | undefined;
  /** Writes `ops` as one WriteBatch through the database's writer; `sync` (default true). */
  write(ops: readonly RocksWrite[], sync?: boolean): Promise<void>;
  /**
   * Removes every key in [`gte`, `lt`) of the log's column family with one range deletion,
   * through the writer (in order with its writes, off the event loop), not synced: for
   * records already dead on disk (below a durable compaction floor), so losing it in a crash
   * only leaves them for the next call to remove.
   */
  clear(gte: Uint8Array, lt: Uint8Array): Promise<void>;
  /** Registers work to finish before the database closes (group committers). */
  beforeClose(hook: () => Promise<void>): () => void;
  /** Runs the `beforeClose` hooks, then closes the database if this object opened it. */
  close(): Promise<void>;
}

/**
 * Loads `@nxtedition/rocksdb` lazily (through `@oprc/rocksdb`), so the in-memory parts of
 * this package work without the native binding installed.
 * @throws RaftError `unavailable` with install instructions when it cannot be loaded.
 */
export async function loadRocksLogBinding(): Promise<RocksLevelConstructor> {
  try {
    return await loadRocksBinding();
  } catch (cause) {
    throw new RaftError("unavailable", (cause as Error).message.replace(/^\[[a-z_]+\] /, ""), {
      cause,
    });
  }
}

/** Options of {@link openRocksLogDatabase}. */
export interface OpenRocksLogDatabaseOptions {
  /** Directory of the database (created when missing). */
  readonly path: string;
  /**
   * Column family for the log records. Default `"raft-log"`, so a database shared with
   * the entry store keeps Raft state out of the object key space.
   */
  readonly column?: string;
  /** Other column families that exist in the database and must be opened too. */
  readonly otherColumns?: readonly string[];
  /** The binding to use instead of importing `@nxtedition/rocksdb` (tests, bundlers). */
  readonly binding?: RocksLevelConstructor;
}

/**
 * Opens (creating if needed) a RocksDB database for Raft logs, with `@oprc/rocksdb`'s
 * group-commit writer (synced writes on a worker thread).
 *
 * @example
 * ```ts
 * const database = await openRocksLogDatabase({ path: "/var/lib/odgm/raft" });
 * const store = await createRocksLogStore({ database, groupId: "orders/0" });
 * ```
 */
export async function openRocksLogDatabase(
  options: OpenRocksLogDatabaseOptions,
): Promise<RocksLogDatabase> {
  const name = options.column ?? "raft-log";
  const columns = [...(options.otherColumns ?? []), name];
  let opened: Awaited<ReturnType<typeof openRocksDatabase>>;
  try {
    opened = await openRocksDatabase({
      location: options.path,
      columns,
      ...(options.binding === undefined ? {} : { binding: options.binding }),
    });
  } catch (cause) {
    throw RaftError.from(cause, "unavailable");
  }
  const handle = (opened.db as { handle?: unknown }).handle;
  const modulePath = options.binding === undefined ? bindingModulePath() : undefined;
  return wrap(opened.db as unknown as RocksDbLike, name, columns, opened.writer, {
    owned: async () => opened.close(),
    workerAccess:
      modulePath !== undefined && typeof handle === "bigint" ? { handle, modulePath } : undefined,
  });
}

/** Options of {@link wrapRocksLogDatabase}. */
export interface WrapRocksLogDatabaseOptions {
  /** Column family of the log records (default: the default family, `"default"`). */
  readonly column?: string;
  /** Every column family the database was opened with. Default: the log's only. */
  readonly columns?: readonly string[];
  /** Lets group committers write from a worker thread. Default: main thread. */
  readonly workerAccess?: { readonly handle: bigint; readonly modulePath: string } | undefined;
}

/**
 * Uses an already open `RocksLevel` (for example the entry store's) for Raft logs; the
 * caller keeps owning (and closes) the database.
 */
export async function wrapRocksLogDatabase(
  db: RocksDbLike,
  options: WrapRocksLogDatabaseOptions = {},
): Promise<RocksLogDatabase> {
  const name = options.column ?? "default";
  const columns = options.columns ?? [name];
  const writer = await createGroupCommitWriter({
    db: db as unknown as RocksLevelLike,
    columns,
    thread: "main",
  });
  return wrap(db, name, columns, writer, {
    owned: async () => writer.close(),
    workerAccess: options.workerAccess,
  });
}

function wrap(
  db: RocksDbLike,
  name: string,
  columns: readonly string[],
  writer: GroupCommitWriter,
  o: {
    owned: () => Promise<void>;
    workerAccess: { readonly handle: bigint; readonly modulePath: string } | undefined;
  },
): RocksLogDatabase {
  const hooks = new Set<() => Promise<void>>();
  let closed = false;
  return {
    db,
    column: db.columns[name],
    columnName: name,
    columns,
    workerAccess: o.workerAccess,
    beforeClose(hook) {
      hooks.add(hook);
      return () => hooks.delete(hook);
    },
    async write(ops, sync = true) {
      try {
        await writer.write(
          ops.map((op) => ({ column: name, ...op })),
          { sync },
        );
      } catch (cause) {
        throw RaftError.from(cause, "unavailable");
      }
    },
    async clear(gte, lt) {
      try {
        await writer.clear(name, gte, lt);
      } catch (cause) {
        throw RaftError.from(cause, "unavailable");
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const hook of [...hooks]) await hook();
      hooks.clear();
      await o.owned();
    },
  };
}

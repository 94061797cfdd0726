import { createRequire } from "node:module";
import { RaftError } from "../core/raft-error.js";

/** The subset of an `@nxtedition/rocksdb` write batch this package uses. */
export interface RocksBatchLike {
  put(key: Uint8Array, value: Uint8Array, options?: { column?: unknown }): unknown;
  del(key: Uint8Array, options?: { column?: unknown }): unknown;
  write(options: { sync: boolean }): Promise<void>;
}

/** The subset of an `@nxtedition/rocksdb` `RocksLevel` this package uses. */
export interface RocksDbLike {
  readonly columns: Readonly<Record<string, unknown>>;
  open(options: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
  batch(): RocksBatchLike;
  iterator(options: Record<string, unknown>): {
    all(): Promise<[Uint8Array, Uint8Array][]>;
  };
  /** Synchronous multi-get (nxtedition extension; used for entries evicted from the cache). */
  _getManySync(keys: Uint8Array[], options: { column?: unknown }): (Uint8Array | undefined)[];
}

/** Constructor of `RocksLevel` (the binding's export). */
export type RocksLevelConstructor = new (
  location: string,
  options?: Record<string, unknown>,
) => RocksDbLike;

/** One key write inside a batch. */
export type RocksWrite =
  | { readonly type: "put"; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly type: "del"; readonly key: Uint8Array };

/** What a worker thread needs to write to the same open database (see the group committer). */
export interface RocksWorkerAccess {
  /** Native handle of the open database (`RocksLevel#handle`). */
  readonly handle: bigint;
  /** Absolute path of the binding's entry module, for `require` in the worker. */
  readonly modulePath: string;
  /** Column family name of the log records (`undefined` = the default family). */
  readonly column: string | undefined;
}

/** A RocksDB database (or one column family of one) holding the logs of many Raft groups. */
export interface RocksLogDatabase {
  readonly db: RocksDbLike;
  /** Column family handle the log records live in (`undefined` = the default family). */
  readonly column: unknown;
  /** Present when writes can be made from a worker thread (databases opened here). */
  readonly workerAccess: RocksWorkerAccess | undefined;
  /** Writes `ops` as one WriteBatch; `sync` (default true) fsyncs the WAL first. */
  write(ops: readonly RocksWrite[], sync?: boolean): Promise<void>;
  /**
   * Registers work to finish before the database closes (group committers use it to
   * stop their worker thread first). Returns a function that unregisters it.
   */
  beforeClose(hook: () => Promise<void>): () => void;
  /** Runs the `beforeClose` hooks, then closes the database if this object opened it. */
  close(): Promise<void>;
}

/**
 * Loads `@nxtedition/rocksdb` lazily, so the in-memory parts of this package work without
 * the native binding installed.
 * @throws RaftError `unavailable` with install instructions when it cannot be loaded.
 */
export async function loadRocksBinding(): Promise<RocksLevelConstructor> {
  try {
    const mod = (await import(BINDING)) as {
      RocksLevel?: RocksLevelConstructor;
      default?: { RocksLevel?: RocksLevelConstructor };
    };
    const ctor = mod.RocksLevel ?? mod.default?.RocksLevel;
    if (ctor === undefined) throw new Error("the module has no RocksLevel export");
    return ctor;
  } catch (cause) {
    throw new RaftError(
      "unavailable",
      "the RocksDB log store needs the optional dependency @nxtedition/rocksdb " +
        "(npm install @nxtedition/rocksdb); it could not be loaded",
      { cause },
    );
  }
}

// A variable specifier: the binding ships no typings, and stays optional at build time.
const BINDING = "@nxtedition/rocksdb";

function bindingPath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve(BINDING);
  } catch {
    return undefined;
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
 * Opens (creating if needed) a RocksDB database for Raft logs.
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
  const RocksLevel = options.binding ?? (await loadRocksBinding());
  const name = options.column ?? "raft-log";
  const columns: Record<string, object> = { default: {} };
  for (const c of options.otherColumns ?? []) columns[c] = {};
  columns[name] = {};
  const db = new RocksLevel(options.path, { keyEncoding: "buffer", valueEncoding: "buffer" });
  await db.open({ createIfMissing: true, columns });
  const column = db.columns[name];
  const modulePath = options.binding === undefined ? bindingPath() : undefined;
  const handle = (db as { handle?: unknown }).handle;
  const workerAccess =
    modulePath !== undefined && typeof handle === "bigint"
      ? { handle, modulePath, column: name }
      : undefined;
  return wrapRocksLogDatabase(db, column, { owned: true, workerAccess });
}

/** Options of {@link wrapRocksLogDatabase}. */
export interface WrapRocksLogDatabaseOptions {
  /** Close `db` when the returned database is closed. Default false (the caller owns it). */
  readonly owned?: boolean;
  /** Lets group committers write from a worker thread. Default: none (main thread). */
  readonly workerAccess?: RocksWorkerAccess | undefined;
}

/**
 * Uses an already open `RocksLevel` (for example the entry store's) for Raft logs.
 * @param column - column family handle from `db.columns`, or `undefined` for the default.
 */
export function wrapRocksLogDatabase(
  db: RocksDbLike,
  column: unknown,
  options: WrapRocksLogDatabaseOptions = {},
): RocksLogDatabase {
  const opts = column === undefined ? {} : { column };
  const hooks = new Set<() => Promise<void>>();
  let closed = false;
  return {
    db,
    column,
    workerAccess: options.workerAccess,
    beforeClose(hook: () => Promise<void>): () => void {
      hooks.add(hook);
      return () => hooks.delete(hook);
    },
    async write(ops: readonly RocksWrite[], sync = true): Promise<void> {
      const batch = db.batch();
      for (const op of ops) {
        if (op.type === "put") batch.put(op.key, op.value, opts);
        else batch.del(op.key, opts);
      }
      await batch.write({ sync });
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const hook of [...hooks]) await hook();
      hooks.clear();
      if (options.owned === true) await db.close();
    },
  };
}

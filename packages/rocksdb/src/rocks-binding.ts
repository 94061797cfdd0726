// The parts of `@nxtedition/rocksdb` 12 (abstract-level 1) ODGM uses, as structural types,
// and its lazy loader: the binding is an optional dependency, loaded on first use.
import { createRequire } from "node:module";
import { RocksError } from "./rocks-error.js";

/** A column family handle (opaque). */
export type ColumnHandle = object;

/**
 * A write batch of the binding, through its synchronous internals (the public `put` and
 * `del` also encode each key and value and record every operation, and only the public,
 * asynchronous `write`/`close` detach the batch from the database): after `_closeSync`,
 * the database's `detachResource(batch)` lets go of it.
 */
export interface RocksBatchLike {
  _put(key: Uint8Array, value: Uint8Array, options: { column: ColumnHandle }): void;
  _del(key: Uint8Array, options: { column: ColumnHandle }): void;
  /** Writes the batch on the calling thread (an fsync too, when `sync`). */
  _writeSync(options: { sync: boolean }): void;
  _closeSync(): void;
  /** Empties the batch for reuse. */
  _clear(): void;
}

/** An iterator of the binding. */
export interface RocksIteratorLike {
  nextv(size: number): Promise<[Uint8Array, Uint8Array][]>;
  seek(target: Uint8Array): void;
  close(): Promise<void>;
}

/** An open `RocksLevel`. */
export interface RocksLevelLike {
  readonly columns: Record<string, ColumnHandle>;
  open(options: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
  batch(): RocksBatchLike;
  /** Forgets a resource (a batch) the database would otherwise close with itself. */
  detachResource(resource: object): void;
  getMany(
    keys: Uint8Array[],
    options: { column: ColumnHandle },
  ): Promise<(Uint8Array | undefined)[]>;
  /** Synchronous multi-get (a binding extension): for reads that hit the block cache. */
  _getManySync(keys: Uint8Array[], options: { column: ColumnHandle }): (Uint8Array | undefined)[];
  iterator(options: Record<string, unknown>): RocksIteratorLike;
  /**
   * Removes every key in [`gte`, `lt`) of a column family with one `DeleteRange`, on the
   * calling thread, not synced (the binding's internal `clear` without a `limit`).
   */
  _clear(options: { column: ColumnHandle; gte: Uint8Array; lt: Uint8Array }): Promise<void>;
  /** A RocksDB property of the database (`rocksdb.is-write-stopped`, ...), as a string. */
  getProperty(property: string): string;
}

/** The binding's `RocksLevel` class: opened by path, or (in a worker) by a native handle. */
export type RocksLevelConstructor = new (
  locationOrHandle: string | bigint,
  options?: Record<string, unknown>,
) => RocksLevelLike;

// A variable specifier: the binding ships no types and stays optional at build time.
const BINDING = "@nxtedition/rocksdb";

/**
 * Loads `RocksLevel` from `@nxtedition/rocksdb` (12.x).
 * @throws RocksError `unavailable` naming the package when it is missing or does not load.
 */
export async function loadRocksBinding(): Promise<RocksLevelConstructor> {
  try {
    const mod = (await import(BINDING)) as {
      RocksLevel?: RocksLevelConstructor;
      default?: { RocksLevel?: RocksLevelConstructor };
    };
    const ctor = mod.RocksLevel ?? mod.default?.RocksLevel;
    if (typeof ctor !== "function") throw new Error("the module has no RocksLevel export");
    return ctor;
  } catch (cause) {
    throw new RocksError(
      "unavailable",
      "RocksDB storage needs the optional dependency @nxtedition/rocksdb 12.x and its prebuilt " +
        `binary (npm install @nxtedition/rocksdb): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** Absolute path of the binding's entry module (what a worker thread requires), if resolvable. */
export function bindingModulePath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve(BINDING);
  } catch {
    return undefined;
  }
}

import xxhash from "xxhash-wasm";
import { IdError } from "./id-error.js";

// xxhash-wasm compiles its WebAssembly module asynchronously; top-level await makes the
// hash functions below synchronous for every importer (ESM only).
const { h64 } = await xxhash();

/**
 * xxHash64 (seed 0) of the UTF-8 bytes of `id`, as an unsigned 64-bit `bigint`. Pass the
 * normalized id (see `normalizeObjectId`): the value is stable across processes, versions and
 * replicas, and is never persisted.
 *
 * @example
 * ```ts
 * hashId(""); // 0xef46db3751d8e999n
 * hashId("a"); // 0xd24ec4f1a98c6e5bn
 * ```
 */
export function hashId(id: string): bigint {
  return h64(id);
}

/**
 * The partition an id maps to under hash partitioning: `hashId(id) % partitions`, in
 * `0..partitions-1`. For future auto-partitioning; today clients choose the partition.
 *
 * @throws {IdError} `out_of_range` when `partitions` is not an integer in 1..2^32-1.
 *
 * @example
 * ```ts
 * partitionOf("user-123", 16); // 0..15, the same on every node
 * ```
 */
export function partitionOf(id: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 0xffff_ffff) {
    throw new IdError(
      "out_of_range",
      `partitions must be an integer in 1..4294967295, got ${String(partitions)}`,
    );
  }
  return Number(h64(id) % BigInt(partitions));
}

// @oprc/entry-store/rocksdb — the RocksDB storage engine (native binding loaded on use).

export type {
  RocksBinding,
  RocksEngine,
  RocksEngineOptions,
  RocksEngineStats,
} from "./rocksdb-engine.js";
export { openRocksEngine } from "./rocksdb-engine.js";

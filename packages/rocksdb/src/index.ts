// @oprc/rocksdb — one RocksDB adapter for ODGM's stores: the lazily loaded binding, its
// types, opening a database, and the group-commit writer (synced writes on a worker thread).
export type {
  GroupCommitStats,
  GroupCommitWriter,
  GroupCommitWriterOptions,
  RocksWriteOp,
  WorkerHeap,
} from "./group-commit-writer.js";
export { createGroupCommitWriter } from "./group-commit-writer.js";
export type {
  ColumnHandle,
  RocksBatchLike,
  RocksIteratorLike,
  RocksLevelConstructor,
  RocksLevelLike,
} from "./rocks-binding.js";
export { bindingModulePath, loadRocksBinding } from "./rocks-binding.js";
export type { OpenRocksDatabaseOptions, RocksDatabase } from "./rocks-database.js";
export { classifyOpenError, openRocksDatabase } from "./rocks-database.js";
export type { RocksErrorCode } from "./rocks-error.js";
export { isRocksError, RocksError } from "./rocks-error.js";

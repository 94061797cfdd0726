// @oprc/raft-log/rocksdb — the durable log store on RocksDB (through @oprc/rocksdb: the
// lazily loaded binding and its group-commit writer) and the group committer that batches
// many groups' saves into one synced write.
export type {
  GroupCommitStats,
  GroupCommitter,
  GroupCommitterOptions,
} from "./storage/group-committer.js";
export { createGroupCommitter } from "./storage/group-committer.js";
export type {
  OpenRocksLogDatabaseOptions,
  RocksDbLike,
  RocksLevelConstructor,
  RocksLogDatabase,
  RocksWrite,
  WrapRocksLogDatabaseOptions,
} from "./storage/rocks-log-database.js";
export {
  loadRocksLogBinding as loadRocksBinding,
  openRocksLogDatabase,
  wrapRocksLogDatabase,
} from "./storage/rocks-log-database.js";
export type { RocksLogStore, RocksLogStoreOptions } from "./storage/rocks-log-store.js";
export { createRocksLogStore } from "./storage/rocks-log-store.js";

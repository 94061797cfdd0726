// @oprc/raft-log/rocksdb — the durable log store on RocksDB (@nxtedition/rocksdb, loaded
// lazily) and the group committer that batches many groups' saves into one synced write.
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
  RocksWorkerAccess,
  RocksWrite,
  WrapRocksLogDatabaseOptions,
} from "./storage/rocks-log-database.js";
export {
  loadRocksBinding,
  openRocksLogDatabase,
  wrapRocksLogDatabase,
} from "./storage/rocks-log-database.js";
export type { RocksLogStore, RocksLogStoreOptions } from "./storage/rocks-log-store.js";
export { createRocksLogStore } from "./storage/rocks-log-store.js";

// @oprc/entry-store — per-entry object storage for ODGM (spec §4).
//
// For users: createEntryStore + an engine (createMemoryEngine here; openRocksEngine from
// the "@oprc/entry-store/rocksdb" subpath, which loads the native binding only when used).
// For engine authors: the KvEngine / KvShard port types.

export type { ChangeRetention } from "./change-log.js";
export type { ChangeLog, EntryStore, EntryStoreOptions } from "./entry-store.js";
export { createEntryStore } from "./entry-store.js";
export type {
  Keyspace,
  KvEngine,
  KvEntry,
  KvIterator,
  KvIteratorOptions,
  KvRange,
  KvShard,
  KvWriteOp,
  KvWriteOptions,
} from "./kv.js";
export type { MemoryEngineOptions } from "./memory-engine.js";
export { createMemoryEngine } from "./memory-engine.js";
export type {
  BatchOp,
  ConvertLegacyOp,
  DeleteEntryOp,
  DeleteObjectOp,
  MergeObjectOp,
  ObjectMutationBase,
  OpValue,
  SetEntryOp,
  SetEventConfigOp,
  SetObjectOp,
} from "./mutation-op.js";
export type {
  CrdtMerge,
  MutationPlan,
  ObjectState,
  PlanEnv,
  StateNeeds,
  StoreOp,
} from "./mutation-planner.js";
// The pure core of the write path, for replicas and for testing state machines.
export { ABSENT_STATE, planMutation, stateNeeds } from "./mutation-planner.js";
export type { StoreErrorCode, StoreErrorDetails } from "./store-error.js";
export { isStoreError, StoreError } from "./store-error.js";
export type {
  BatchInput,
  ChangedEntry,
  ConvertResult,
  EntryAction,
  EntryInput,
  GetEntryResult,
  GetObjectOptions,
  ListEntriesOptions,
  ListEntriesResult,
  ListObjectsOptions,
  ListObjectsResult,
  MutationOptions,
  MutationResult,
  ObjectInput,
  ObjectMetadata,
  ObjectSummary,
  StoredEntry,
  StoredObject,
  StoreStats,
} from "./types.js";

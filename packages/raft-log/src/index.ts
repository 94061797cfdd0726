// @oprc/raft-log — a deterministic Raft core, log storage and the canonical ODGM log-entry
// codec. The RocksDB log store is the "./rocksdb" subpath; the simulator, the invariant
// checker and the linearizability checker (for testing state machines) are "./testing".

// Canonical ODGM log-entry codec
export type {
  BatchOp,
  ConvertLegacyOp,
  DeleteEntryOp,
  DeleteObjectOp,
  MergeObjectOp,
  NoopOp,
  ObjectMutationBase,
  OdgmOp,
  SetEntryOp,
  SetEventConfigOp,
  SetObjectOp,
  ValData,
} from "./codec/odgm-op.js";
export { decodeOdgmOp, encodeOdgmOp, ODGM_OP_FORMAT_VERSION } from "./codec/odgm-op-codec.js";
// Raft core (pure: no timers, sockets or disk)
export type { ConfChangeCodec } from "./core/conf-change.js";
export { applyConfChange, jsonConfChangeCodec } from "./core/conf-change.js";
export type { Message, MessageType } from "./core/message.js";
export { createMessage } from "./core/message.js";
export { createPrng } from "./core/prng.js";
export type {
  RaftOptions,
  RaftRole,
  RaftStatus,
  ReadOnlyOption,
  Ready,
  SoftState,
} from "./core/raft.js";
export { createRaft, Raft, stablyCommitted } from "./core/raft.js";
export type { RaftErrorCode } from "./core/raft-error.js";
export { isRaftError, RaftError } from "./core/raft-error.js";
export type { LogReader } from "./core/raft-log.js";
export type { ReadState } from "./core/read-only.js";
export { EMPTY_CONF_STATE, EMPTY_SNAPSHOT } from "./storage/log-state.js";
// In-memory log store (tests, simulation)
export type { MemoryLogStore, MemoryLogStoreOptions } from "./storage/memory-log-store.js";
export { createMemoryLogStore } from "./storage/memory-log-store.js";
// Shared types and the storage port
export type { LogStore, PersistBatch } from "./storage-port.js";
export type {
  ConfChange,
  ConfChangeSingle,
  ConfState,
  Entry,
  EntryType,
  HardState,
  Snapshot,
  SnapshotBytes,
  SnapshotChunk,
  SnapshotMetadata,
  SnapshotReceiver,
  SnapshotSink,
} from "./types.js";
export { EMPTY_HARD_STATE, snapshotBytes } from "./types.js";

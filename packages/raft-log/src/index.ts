// @oprc/raft-log — a deterministic Raft core, log storage, the canonical ODGM log-entry
// codec and a linearizability checker. The RocksDB log store is the "./rocksdb" subpath.

// Linearizability checking
export type {
  CheckOptions,
  CheckResult,
  CheckVerdict,
  PartitionResult,
} from "./checker/check-operations.js";
export {
  analyzeOperations,
  checkOperations,
  DEFAULT_MAX_STEPS,
} from "./checker/check-operations.js";
export type { EdnEvent, EdnValue } from "./checker/edn-history.js";
export { parseEdnEvents, parseEdnHistory } from "./checker/edn-history.js";
export type {
  HistoryEvent,
  HistoryRecorder,
  HistoryRecorderOptions,
} from "./checker/history-recorder.js";
export { createHistoryRecorder } from "./checker/history-recorder.js";
export type { KvInput, KvOperation, KvOutput } from "./checker/kv-model.js";
export { kvModel } from "./checker/kv-model.js";
export type { Model, Operation } from "./checker/model.js";
// Canonical ODGM log-entry codec
export type { CodecErrorCode } from "./codec/codec-error.js";
export { CodecError, isCodecError } from "./codec/codec-error.js";
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
export type { InvariantSubject } from "./core/invariants.js";
export { createInvariantChecker, InvariantChecker } from "./core/invariants.js";
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
export { createRaft, Raft } from "./core/raft.js";
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
  SnapshotMetadata,
} from "./types.js";
export { EMPTY_HARD_STATE } from "./types.js";

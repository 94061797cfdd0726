// @oprc/raft-log/testing — what the package tests itself with, for users testing their
// own state machines and services: a Wing–Gong–Lowe linearizability checker (with a KV
// model, an EDN history parser and a history recorder), the Raft invariant checker, and the
// seeded cluster simulator.
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
// Raft safety invariants (election safety, log matching, leader completeness, …)
export type { InvariantSubject } from "./core/invariants.js";
export { createInvariantChecker, InvariantChecker } from "./core/invariants.js";
// The seeded simulator
export type { SimCheck, SimFailure, SimOptions, SimResult, SimStats } from "./sim/simulator.js";
export { nodesForSeed, replayCommand, runSimulation } from "./sim/simulator.js";

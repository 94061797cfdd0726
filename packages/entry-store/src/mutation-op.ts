// The logical operations every mutation of an entry store is expressed in: exactly the
// operations the canonical Raft log-entry codec of `@oprc/raft-log` encodes (one
// definition, imported as types only), so a replicated shard applies what a single node
// applies.
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
  ValData as OpValue,
} from "@oprc/raft-log";

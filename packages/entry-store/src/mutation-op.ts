// The logical operations every mutation of an entry store is expressed in. They are the
// operations the canonical Raft log-entry codec of `@oprc/raft-log` encodes, so a
// replicated shard applies exactly what a single-node store applies.
// TODO(merge): re-export these from @oprc/raft-log once its codec carries them.

/** An entry value: opaque bytes plus the ValType number (`1` = CRDT map). */
export interface OpValue {
  readonly data: Uint8Array;
  readonly type: number;
}

/** Fields every object mutation carries. */
export interface ObjectMutationBase {
  readonly cls: string;
  readonly partition: number;
  /** Normalized object id. */
  readonly objectId: string;
  /** The mutation's time (ms since the epoch), assigned once by whoever proposed it. */
  readonly timestampMs: number;
  /** Compare-and-swap on the object version (a missing object is 0). */
  readonly expectedVersion?: bigint;
}

export interface SetEntryOp extends ObjectMutationBase {
  readonly kind: "set_entry";
  readonly key: string;
  readonly value: OpValue;
}
export interface DeleteEntryOp extends ObjectMutationBase {
  readonly kind: "delete_entry";
  readonly key: string;
}
export interface BatchOp extends ObjectMutationBase {
  readonly kind: "batch";
  readonly sets: ReadonlyMap<string, OpValue>;
  readonly deletes: readonly string[];
}
export interface SetObjectOp extends ObjectMutationBase {
  readonly kind: "set_object";
  readonly entries: ReadonlyMap<string, OpValue>;
  readonly event?: Uint8Array;
}
export interface MergeObjectOp extends ObjectMutationBase {
  readonly kind: "merge_object";
  readonly entries: ReadonlyMap<string, OpValue>;
  readonly event?: Uint8Array;
}
export interface DeleteObjectOp extends ObjectMutationBase {
  readonly kind: "delete_object";
}
export interface SetEventConfigOp extends ObjectMutationBase {
  readonly kind: "set_event_config";
  readonly event?: Uint8Array;
}
export interface ConvertLegacyOp extends ObjectMutationBase {
  readonly kind: "convert_legacy";
}
export interface NoopOp {
  readonly kind: "noop";
}
export type OdgmOp =
  | NoopOp
  | SetEntryOp
  | DeleteEntryOp
  | BatchOp
  | SetObjectOp
  | MergeObjectOp
  | DeleteObjectOp
  | SetEventConfigOp
  | ConvertLegacyOp;

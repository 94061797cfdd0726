/**
 * A value stored in an entry: opaque bytes plus the ValType (`0` = bytes, `1` = CRDT map;
 * other numbers are carried unchanged so newer types replicate through older code).
 */
export interface ValData {
  readonly data: Uint8Array;
  /** ValType number (u32). */
  readonly type: number;
}

/**
 * Fields shared by every object mutation.
 *
 * Identities are *normalized* strings (see `@oprc/oprc-id`): numeric object id N is the
 * string `"N"` in canonical decimal, numeric entry key K is `"K"` in canonical u32 decimal.
 * The codec picks the numeric or string variant from the string itself, so one logical
 * operation has exactly one encoding.
 */
export interface ObjectMutationBase {
  /** Class id. */
  readonly cls: string;
  /** Partition id (u32). */
  readonly partition: number;
  /** Normalized object id: non-empty, no NUL. Canonical u64 decimal ⇒ numeric variant. */
  readonly objectId: string;
  /**
   * Wall-clock time the leader assigned to the mutation (ms since the epoch). Carried in
   * the entry so that every replica writes the same `updated` time.
   */
  readonly timestampMs: number;
  /**
   * Compare-and-swap: apply only when the object's version equals this (a missing object
   * is 0). Allowed on every object mutation except `convert_legacy`.
   */
  readonly expectedVersion?: bigint;
}

/** Sets one entry (upsert). */
export interface SetEntryOp extends ObjectMutationBase {
  readonly kind: "set_entry";
  /** Normalized entry key: canonical u32 decimal ⇒ numeric entry. */
  readonly key: string;
  readonly value: ValData;
}

/** Deletes one entry. */
export interface DeleteEntryOp extends ObjectMutationBase {
  readonly kind: "delete_entry";
  readonly key: string;
}

/** Sets and deletes entries of one object atomically, optionally compare-and-swap. */
export interface BatchOp extends ObjectMutationBase {
  readonly kind: "batch";
  /** Entries to set. A key may not also appear in `deletes`. */
  readonly sets: ReadonlyMap<string, ValData>;
  /** Keys to delete (no duplicates; the encoder sorts them). */
  readonly deletes: readonly string[];
}

/** Replaces an object: listed entries are written, all others removed. */
export interface SetObjectOp extends ObjectMutationBase {
  readonly kind: "set_object";
  readonly entries: ReadonlyMap<string, ValData>;
  /**
   * The object's event configuration (an encoded `ObjectEvent` protobuf, carried as
   * opaque bytes). Absent = keep the current configuration.
   */
  readonly event?: Uint8Array;
}

/** Upserts the listed entries, keeps the rest (two CRDT map values merge). */
export interface MergeObjectOp extends ObjectMutationBase {
  readonly kind: "merge_object";
  readonly entries: ReadonlyMap<string, ValData>;
  /** An encoded `ObjectEvent` replacing the event configuration; absent = keep it. */
  readonly event?: Uint8Array;
}

/** Replaces (or, without `event`, removes) the object's event configuration. */
export interface SetEventConfigOp extends ObjectMutationBase {
  readonly kind: "set_event_config";
  /** An encoded `ObjectEvent`; absent removes the configuration. */
  readonly event?: Uint8Array;
}

/** Deletes an object (entries and event config; metadata becomes a tombstone). */
export interface DeleteObjectOp extends ObjectMutationBase {
  readonly kind: "delete_object";
}

/** Converts a legacy blob object (numeric id only) into per-entry records. */
export interface ConvertLegacyOp extends ObjectMutationBase {
  readonly kind: "convert_legacy";
}

/** An entry with no effect on the state machine (e.g. a new leader's barrier). */
export interface NoopOp {
  readonly kind: "noop";
}

/** Every ODGM operation a Raft log entry can carry. */
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

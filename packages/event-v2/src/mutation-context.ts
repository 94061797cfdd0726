import type { ObjectEvent } from "@oprc/grpc-api/messages";
import { isCanonicalU32 } from "@oprc/oprc-id";
import { EventV2Error } from "./event-v2-error.js";

/**
 * What happened to one entry: `create` = absent before, `update` = present before and
 * written, `delete` = present before and removed (spec §5).
 */
export type MutationAction = "create" | "update" | "delete";

/** One entry changed by a mutation (spec §5). */
export interface ChangedKey {
  /** The entry key in canonical string form; numeric keys as decimal (`"42"`). */
  readonly key: string;
  /** True when `key` is a canonical u32 decimal (a numeric entry key; `"042"` is not). */
  readonly numeric: boolean;
  /** What happened to the entry. */
  readonly action: MutationAction;
}

/**
 * One committed mutation of one object, as the shard hands it to the dispatcher (spec §5).
 * Built after the write is durable (and, on a replicated shard, committed and applied).
 */
export interface MutationContext {
  /** The normalized object id (string form; numeric ids as canonical decimal). */
  readonly objectId: string;
  /** The class (collection) id. */
  readonly clsId: string;
  /** The partition id. */
  readonly partitionId: number;
  /** The object version before the mutation (0 for a new object). */
  readonly versionBefore: bigint;
  /** The object version after the mutation (`versionBefore + 1` for one mutation call). */
  readonly versionAfter: bigint;
  /** The entries that changed, in the order the store reported them. Never empty. */
  readonly changed: readonly ChangedKey[];
  /** The object's trigger configuration at the time of the mutation, if any. */
  readonly eventConfig: ObjectEvent | undefined;
}

/**
 * The mutation result of the entry store, accepted structurally so this package does not
 * depend on `@oprc/entry-store`.
 */
export interface MutationResultLike {
  /** The object version before the call. */
  readonly versionBefore: bigint;
  /** The object version after the call (equal to `versionBefore` when nothing changed). */
  readonly versionAfter: bigint;
  /** The changed entries (canonical string keys; numeric keys as decimal). */
  readonly changed: readonly ChangedKey[];
  /**
   * The event config in effect for the mutation, when the store reports it; used when
   * {@link MutationTarget.eventConfig} is not given.
   */
  readonly eventConfig?: ObjectEvent | undefined;
}

/** The object a mutation applies to, for {@link mutationContextFromResult}. */
export interface MutationTarget {
  /** The normalized object id. */
  readonly objectId: string;
  /** The class (collection) id. */
  readonly clsId: string;
  /** The partition id. */
  readonly partitionId: number;
  /** The object's `ObjectEvent` (trigger configuration); default `result.eventConfig`. */
  readonly eventConfig?: ObjectEvent | undefined;
}

/**
 * Classifies one entry write: `existedBefore` = the key had a value before the call,
 * `deleted` = the call removes it. Returns `undefined` for the idempotent delete of a
 * missing key, which emits nothing (seed 001 §3 "Capture Phase").
 *
 * @example
 * ```ts
 * classifyChange(false, false); // "create"
 * classifyChange(true, false);  // "update"
 * classifyChange(true, true);   // "delete"
 * classifyChange(false, true);  // undefined
 * ```
 */
export function classifyChange(
  existedBefore: boolean,
  deleted: boolean,
): MutationAction | undefined {
  if (deleted) return existedBefore ? "delete" : undefined;
  return existedBefore ? "update" : "create";
}

// The canonical-u32 rule (`isCanonicalU32`), decided locally except for keys of 10 or
// more characters that start with 1–9: keys that do not start with a digit (and "") are
// not canonical, "0…" is canonical only as "0", and a canonical decimal under 10 digits is
// below 10^9 < 2^32, so it needs no upper-bound comparison. Keeps context creation to one
// short scan per key without a cross-package call.
function isNumericKey(key: string): boolean {
  const first = key.charCodeAt(0); // NaN for ""
  if (!(first >= 48 && first <= 57)) return false;
  const n = key.length;
  if (first === 48) return n === 1;
  if (n > 9) return isCanonicalU32(key);
  for (let i = 1; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Builds a {@link ChangedKey}, deriving `numeric` from the canonical-u32 rule (spec §2). */
export function changedKey(key: string, action: MutationAction): ChangedKey {
  return { key, numeric: isNumericKey(key), action };
}

/**
 * The changed keys of an object delete: a `delete` for every key the object had
 * (spec §5: "Deleting an object reports a delete for every key it had").
 */
export function objectDeleteChanges(keysBefore: Iterable<string>): ChangedKey[] {
  const out: ChangedKey[] = [];
  for (const key of keysBefore) out.push({ key, numeric: isNumericKey(key), action: "delete" });
  return out;
}

/**
 * Builds the {@link MutationContext} of one entry-store mutation result. Returns
 * `undefined` when the call changed nothing (empty `changed`): such calls bump no version
 * and emit no event (spec §4). Throws `invalid_argument` when versions are not
 * monotonic or a key's `numeric` flag contradicts its form, since either means the
 * caller mixed up results.
 *
 * @example
 * ```ts
 * const ctx = mutationContextFromResult(
 *   { versionBefore: 0n, versionAfter: 1n, changed: [{ key: "42", numeric: true, action: "create" }] },
 *   { objectId: "user-1", clsId: "users", partitionId: 0, eventConfig },
 * );
 * if (ctx) dispatcher.tryEnqueue(ctx);
 * ```
 */
export function mutationContextFromResult(
  result: MutationResultLike,
  target: MutationTarget,
): MutationContext | undefined {
  const changed = result.changed;
  if (changed.length === 0) return undefined;
  if (result.versionAfter <= result.versionBefore) {
    throw new EventV2Error(
      "invalid_argument",
      `a mutation with changes must advance the version (before ${result.versionBefore}, after ${result.versionAfter})`,
    );
  }
  for (let i = 0; i < changed.length; i++) {
    const c = changed[i] as ChangedKey;
    if (c.numeric !== isNumericKey(c.key)) {
      throw new EventV2Error(
        "invalid_argument",
        `changed key ${JSON.stringify(c.key)} has numeric=${c.numeric}, expected ${!c.numeric}`,
      );
    }
  }
  return {
    objectId: target.objectId,
    clsId: target.clsId,
    partitionId: target.partitionId,
    versionBefore: result.versionBefore,
    versionAfter: result.versionAfter,
    changed,
    eventConfig: target.eventConfig ?? result.eventConfig,
  };
}

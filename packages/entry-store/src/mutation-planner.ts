// The pure core of every mutation: (operation, the object's state, environment) →
// (storage writes, result, the object's next state). No I/O, no clock, no randomness: the
// time is the operation's own `timestampMs`, so every replica of a Raft shard that applies
// the same operation to the same state writes the same bytes (seed 003 §6). CAS, version
// rules, tombstones, revival and legacy-blob conversion live here and nowhere else.
import { fromBinary } from "@bufbuild/protobuf";
import { encodeEventConfigKey, encodeLegacyKey, encodeMetadataKey } from "@oprc/granular-key";
import {
  type ObjData,
  type ObjectEvent,
  ObjectEventSchema,
  type ObjectMetaRecord,
  ValType,
} from "@oprc/grpc-api/messages";
import { isCanonicalU64 } from "@oprc/oprc-id";
import { checkId, compareEntryKeys, type KeyInfo, keyArg, keyInfo } from "./entry-keys.js";
import type { KvWriteOp } from "./kv.js";
import { blobEntries, buildBlob } from "./legacy-blobs.js";
import type { ObjectMutationBase, OdgmOp, OpValue } from "./mutation-op.js";
import { encodeBlob, encodeEntry, encodeEvent, encodeMeta } from "./records.js";
import { StoreError } from "./store-error.js";
import type { ChangedEntry, ConvertResult, MutationResult } from "./types.js";

type ObjectOp = Exclude<OdgmOp, { kind: "noop" }>;
type WithoutPlacement<T> = T extends ObjectMutationBase ? Omit<T, "cls" | "partition"> : never;

/**
 * An object mutation as a store applies it. The store is one shard, so the operation's
 * class and partition (which the Raft log carries) are not needed; a full log operation is
 * accepted as it is.
 */
export type StoreOp = WithoutPlacement<ObjectOp>;

/** What must be read before an operation can be planned. */
export interface StateNeeds {
  /** Entry keys whose presence (and, for a merge, value) the plan depends on. */
  readonly keys: readonly string[];
  /** Every entry key of the object is needed (replace and delete remove the rest). */
  readonly allKeys: boolean;
  /** Values of the loaded entries are needed too, not only their presence. */
  readonly values: boolean;
  /** The legacy blob is needed even when granular metadata exists (conversion). */
  readonly blobAlways: boolean;
}

/**
 * The state of one object as the latest planned mutation left it: what planning an
 * operation on it needs. Values of `meta`/`event` are the store's records.
 */
export interface ObjectState {
  /** Granular metadata (tombstones included); `undefined` when the object has none. */
  readonly meta: ObjectMetaRecord | undefined;
  /** The event config, meaningful only while the object is live. */
  readonly event: ObjectEvent | undefined;
  /**
   * The legacy blob of a numeric id: the blob, `null` when known to be absent, `undefined`
   * when not loaded (the store reads it only when `meta` is missing, or for conversion).
   */
  readonly blob: ObjData | null | undefined;
  /**
   * The object's granular entries among the keys the operation named (every entry when
   * {@link StateNeeds.allKeys}); a value is `undefined` when only presence was loaded.
   * Ignored while the object is a legacy blob (the blob holds its entries).
   */
  readonly entries: ReadonlyMap<string, OpValue | undefined>;
}

/** The state of an object that has never been written. */
export const ABSENT_STATE: ObjectState = Object.freeze({
  meta: undefined,
  event: undefined,
  blob: null,
  entries: new Map(),
});

/** Merges two CRDT values (saved Automerge documents) synchronously. */
export type CrdtMerge = (
  stored: Uint8Array,
  incoming: Uint8Array,
  storedKey: Uint8Array,
) => Uint8Array;

/** The store settings a plan depends on (identical on every replica of a shard). */
export interface PlanEnv {
  /**
   * False writes numeric ids without metadata as whole legacy blobs only, the pre-granular
   * format (no versions, no events): what ODGM wrote before per-entry records.
   */
  readonly granular: boolean;
  /** Legacy blobs are read (and converted on write). */
  readonly legacyFallback: boolean;
  /**
   * Dual-write (`ODGM_ENABLE_GRANULAR_STORAGE=false` on a node, seed 003 phases A–C):
   * every write of a numeric id writes its per-entry records and metadata as always and,
   * in the same atomic write, the whole object as a legacy blob, which a node of the
   * pre-granular format can read. Reads are served from the per-entry records.
   */
  readonly dualWrite?: boolean;
  /** CRDT merge, needed only by a merge with a `VAL_TYPE_CRDT_MAP` value over another. */
  readonly crdt?: CrdtMerge | undefined;
}

/** What an operation does, computed from the object's state. */
export interface MutationPlan {
  /** The storage writes of the object (keyspaces `objects` and `blobs`), one atomic unit. */
  readonly writes: readonly KvWriteOp[];
  /** What changed (the mutation context of events and triggers). */
  readonly result: MutationResult;
  /** The object's state after the writes (entries: see {@link MutationPlan.entryChanges}). */
  readonly next: Omit<ObjectState, "entries">;
  /** Granular entries written (value) or removed (`null`), by canonical key. */
  readonly entryChanges: ReadonlyMap<string, OpValue | null>;
  /** Change of the shard's live-object count: +1 created or revived, −1 deleted. */
  readonly liveDelta: number;
  /** Set for `convert_legacy`. */
  readonly conversion?: ConvertResult;
}

const NO_CHANGES: readonly ChangedEntry[] = Object.freeze([]);
const NO_WRITES: readonly KvWriteOp[] = Object.freeze([]);
const NO_ENTRY_CHANGES: ReadonlyMap<string, OpValue | null> = new Map();

/** Dual-write rebuilds a numeric id's blob from every entry, so it reads them all. */
const EVERY_ENTRY: StateNeeds = Object.freeze({
  keys: [],
  allKeys: true,
  values: true,
  blobAlways: false,
});

/** The reads {@link planMutation} needs for `op` under `env`. */
export function stateNeeds(op: StoreOp, env?: Pick<PlanEnv, "dualWrite">): StateNeeds {
  if (env?.dualWrite === true && op.kind !== "convert_legacy" && isCanonicalU64(op.objectId))
    return EVERY_ENTRY;
  switch (op.kind) {
    case "set_entry":
    case "delete_entry":
      return { keys: [op.key], allKeys: false, values: false, blobAlways: false };
    case "batch":
      return {
        keys: [...op.sets.keys(), ...op.deletes],
        allKeys: false,
        values: false,
        blobAlways: false,
      };
    case "merge_object":
      return { keys: [...op.entries.keys()], allKeys: false, values: true, blobAlways: false };
    case "set_object":
    case "delete_object":
      return { keys: [], allKeys: true, values: false, blobAlways: false };
    case "set_event_config":
      return { keys: [], allKeys: false, values: false, blobAlways: false };
    case "convert_legacy":
      return { keys: [], allKeys: false, values: false, blobAlways: true };
  }
}

/** A replacement of the event config: the decoded value and the bytes to store. */
interface EventChange {
  readonly value: ObjectEvent | undefined;
  readonly bytes?: Uint8Array;
}

/** An operation reduced to entry sets and deletes plus object-level intent. */
interface Intent {
  readonly sets: Map<string, { info: KeyInfo; value: OpValue }>;
  readonly dels: Map<string, KeyInfo>;
  /** Replace the event config (`value: undefined` removes it). */
  readonly event?: EventChange;
  /** Write the object even when no entry changes (creation by a replace or event config). */
  readonly touch: boolean;
  /** Delete the object (tombstone). */
  readonly remove: boolean;
}

/** The object as the plan sees it: granular or legacy, with presence of its entries. */
interface Before {
  readonly live: boolean;
  readonly version: bigint;
  readonly event: ObjectEvent | undefined;
  /** The object is a legacy blob (no granular metadata). */
  readonly blob: ObjData | undefined;
  has(key: string): boolean;
  value(key: string): OpValue | undefined;
  /** Every entry key (only valid when the state was loaded with `allKeys`). */
  keys(): Iterable<string>;
}

function describe(id: string, state: ObjectState): Before {
  const blob = state.meta === undefined && state.blob ? state.blob : undefined;
  if (blob !== undefined) {
    const entries = blobEntries(id, blob);
    return {
      live: true,
      version: 0n,
      event: blob.event,
      blob,
      has: (k) => entries.has(k),
      value: (k) => entries.get(k)?.value,
      keys: () => entries.keys(),
    };
  }
  const live = state.meta !== undefined && !state.meta.tombstone;
  const entries = state.entries;
  return {
    live,
    version: state.meta?.objectVersion ?? 0n,
    event: live ? state.event : undefined,
    blob: undefined,
    has: (k) => live && entries.has(k),
    value: (k) => (live ? entries.get(k) : undefined),
    keys: () => (live ? entries.keys() : []),
  };
}

function checkValue(key: string, value: unknown): OpValue {
  const v = value as Partial<OpValue> | null;
  if (typeof v !== "object" || v === null || !(v.data instanceof Uint8Array)) {
    throw new StoreError(
      "invalid_argument",
      `value of entry ${JSON.stringify(key)} must be a ValData`,
    );
  }
  return v as OpValue;
}

function setsOf(id: string, entries: ReadonlyMap<string, OpValue>): Intent["sets"] {
  const out: Intent["sets"] = new Map();
  for (const [key, value] of entries) {
    out.set(key, { info: keyInfo(id, key), value: checkValue(key, value) });
  }
  return out;
}

function decodeEventBytes(bytes: Uint8Array | undefined): EventChange {
  if (bytes === undefined) return { value: undefined };
  if (!(bytes instanceof Uint8Array)) {
    throw new StoreError("invalid_argument", "event config must be an encoded ObjectEvent");
  }
  try {
    return { value: fromBinary(ObjectEventSchema, bytes), bytes };
  } catch (err) {
    throw new StoreError("invalid_argument", "event config is not a valid ObjectEvent", {
      cause: err,
    });
  }
}

function intentOf(id: string, op: StoreOp, before: Before, env: PlanEnv): Intent {
  switch (op.kind) {
    case "set_entry":
      return {
        sets: setsOf(id, new Map([[op.key, op.value]])),
        dels: new Map(),
        touch: false,
        remove: false,
      };
    case "delete_entry":
      return {
        sets: new Map(),
        dels: new Map([[op.key, keyInfo(id, op.key)]]),
        touch: false,
        remove: false,
      };
    case "batch": {
      const sets = setsOf(id, op.sets);
      const dels = new Map<string, KeyInfo>();
      for (const key of op.deletes) {
        if (sets.has(key)) {
          throw new StoreError(
            "invalid_argument",
            `entry key ${JSON.stringify(key)} is both set and deleted`,
          );
        }
        if (!dels.has(key)) dels.set(key, keyInfo(id, key));
      }
      return { sets, dels, touch: false, remove: false };
    }
    case "set_object": {
      const sets = setsOf(id, op.entries);
      const dels = new Map<string, KeyInfo>();
      for (const key of before.keys()) if (!sets.has(key)) dels.set(key, keyInfo(id, key));
      // A replace always writes (even identical content): it is a set.
      return op.event === undefined
        ? { sets, dels, touch: true, remove: false }
        : { sets, dels, touch: true, remove: false, event: decodeEventBytes(op.event) };
    }
    case "merge_object": {
      const sets = setsOf(id, op.entries);
      for (const [key, s] of sets) {
        const old = before.value(key);
        if (old === undefined && before.has(key) && s.value.type === ValType.CRDT_MAP) {
          throw new StoreError(
            "invalid_argument",
            `the stored value of ${key} was not loaded for a CRDT merge`,
          );
        }
        if (
          old !== undefined &&
          old.type === ValType.CRDT_MAP &&
          s.value.type === ValType.CRDT_MAP
        ) {
          if (env.crdt === undefined) {
            throw new StoreError("unavailable", "merging CRDT values needs @automerge/automerge");
          }
          sets.set(key, {
            info: s.info,
            value: {
              data: env.crdt(old.data, s.value.data, s.info.storageKey),
              type: s.value.type,
            },
          });
        }
      }
      // An empty merge creates a missing object and changes nothing on an existing one.
      return op.event === undefined
        ? { sets, dels: new Map(), touch: !before.live, remove: false }
        : {
            sets,
            dels: new Map(),
            touch: !before.live,
            remove: false,
            event: decodeEventBytes(op.event),
          };
    }
    case "delete_object": {
      const dels = new Map<string, KeyInfo>();
      for (const key of before.keys()) dels.set(key, keyInfo(id, key));
      return { sets: new Map(), dels, touch: false, remove: true };
    }
    case "set_event_config":
      // Creates (or revives) a missing object; on a live one, removing no config is a no-op.
      return {
        sets: new Map(),
        dels: new Map(),
        touch: !before.live,
        remove: false,
        event: decodeEventBytes(op.event),
      };
    case "convert_legacy":
      throw new StoreError("invalid_argument", "convert_legacy is planned by planConversion");
  }
}

function checkCas(op: StoreOp, version: bigint): void {
  const expected = op.expectedVersion;
  if (expected === undefined) return;
  if (typeof expected !== "bigint" || expected < 0n) {
    throw new StoreError("invalid_argument", "expectedVersion must be a non-negative bigint");
  }
  if (expected !== version) {
    throw new StoreError(
      "version_mismatch",
      `expected object version ${expected}, found ${version}`,
      {
        expected,
        actual: version,
      },
    );
  }
}

function nowOf(op: StoreOp): bigint {
  const t = op.timestampMs;
  if (typeof t !== "number" || !Number.isFinite(t)) {
    throw new StoreError("invalid_argument", "timestampMs must be a finite number");
  }
  return BigInt(Math.max(0, Math.floor(t)));
}

/**
 * A metadata record of every field given: the literal `create(ObjectMetaRecordSchema, …)`
 * builds (it walks the schema for each message, on every replica for every mutation).
 */
function metaRecord(fields: Omit<ObjectMetaRecord, "$typeName" | "$unknown">): ObjectMetaRecord {
  return {
    $typeName: "oprc.ObjectMetaRecord",
    objectVersion: fields.objectVersion,
    tombstone: fields.tombstone,
    entryCount: fields.entryCount,
    createdAtMs: fields.createdAtMs,
    updatedAtMs: fields.updatedAtMs,
    attributes: fields.attributes,
  };
}

/**
 * Plans `op` against `state` (which must hold what {@link stateNeeds} asks for). Throws a
 * {@link StoreError}: `invalid_argument` for a malformed operation, `version_mismatch` for
 * a failed compare-and-swap; a plan that changes nothing has no writes.
 */
export function planMutation(op: StoreOp, state: ObjectState, env: PlanEnv): MutationPlan {
  const id = op.objectId;
  checkId(id);
  const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
  if (op.kind === "convert_legacy") return planConversion(id, op, state, metaKey, env);
  const before = describe(id, state);
  checkCas(op, before.version);
  const intent = intentOf(id, op, before, env);
  const nowMs = nowOf(op);

  const changed: { info: KeyInfo; action: ChangedEntry["action"] }[] = [];
  for (const { info } of intent.sets.values()) {
    changed.push({ info, action: before.has(info.key) ? "update" : "create" });
  }
  for (const info of intent.dels.values()) {
    if (before.has(info.key)) changed.push({ info, action: "delete" });
  }
  const eventChanges =
    intent.event !== undefined && !(intent.event.value === undefined && before.event === undefined);
  const anything = intent.remove ? before.live : changed.length > 0 || eventChanges || intent.touch;
  if (!anything) {
    return {
      writes: NO_WRITES,
      result: {
        versionBefore: before.version,
        versionAfter: before.version,
        changed: NO_CHANGES,
        wrote: false,
        existedBefore: before.live,
        exists: before.live,
        eventConfig: before.event,
      },
      next: { meta: state.meta, event: state.event, blob: state.blob },
      entryChanges: NO_ENTRY_CHANGES,
      liveDelta: 0,
    };
  }
  changed.sort((a, b) => compareEntryKeys(a.info, b.info));
  const liveAfter = !intent.remove;
  const eventAfter = intent.remove
    ? undefined
    : intent.event !== undefined
      ? intent.event.value
      : before.event;
  const liveDelta = (liveAfter ? 1 : 0) - (before.live ? 1 : 0);
  const writes: KvWriteOp[] = [];
  const entryChanges = new Map<string, OpValue | null>();
  let next: MutationPlan["next"];
  let versionAfter: bigint;

  const dual = env.dualWrite === true && isCanonicalU64(id);
  const legacyWrite =
    !dual && !env.granular && state.meta === undefined && env.legacyFallback && isCanonicalU64(id);
  if (legacyWrite) {
    // Legacy mode: the object stays (or becomes) a whole blob; blobs carry no version.
    versionAfter = 0n;
    const blobKey = encodeLegacyKey(BigInt(id));
    if (!liveAfter) {
      writes.push({ type: "del", keyspace: "blobs", key: blobKey });
      next = { meta: undefined, event: undefined, blob: null };
    } else {
      const entries: Map<string, { info: KeyInfo; value: OpValue }> =
        before.blob === undefined ? new Map() : blobEntries(id, before.blob);
      for (const k of intent.dels.keys()) entries.delete(k);
      for (const [k, v] of intent.sets) entries.set(k, v);
      const blob = buildBlob(entries.values(), eventAfter);
      writes.push({ type: "put", keyspace: "blobs", key: blobKey, value: encodeBlob(blob) });
      next = { meta: undefined, event: undefined, blob };
    }
  } else {
    versionAfter = before.version + 1n;
    let creates = 0n;
    let deletes = 0n;
    for (const c of changed) {
      if (c.action === "create") creates++;
      else if (c.action === "delete") deletes++;
    }
    let entryCount: bigint;
    if (before.blob !== undefined) {
      // Convert the legacy blob in this same write; the mutation applies on top.
      const entries = blobEntries(id, before.blob);
      entryCount = BigInt(entries.size);
      if (liveAfter) {
        for (const [k, { info, value }] of entries) {
          if (intent.sets.has(k) || intent.dels.has(k)) continue;
          writes.push({
            type: "put",
            keyspace: "objects",
            key: info.storageKey,
            value: encodeEntry(value, 0n, nowMs),
          });
          entryChanges.set(k, value);
        }
      }
      if (!dual) writes.push({ type: "del", keyspace: "blobs", key: encodeLegacyKey(BigInt(id)) });
    } else {
      entryCount = before.live ? (state.meta?.entryCount ?? 0n) : 0n;
    }
    entryCount = liveAfter ? entryCount + creates - deletes : 0n;
    for (const [k, { info, value }] of intent.sets) {
      writes.push({
        type: "put",
        keyspace: "objects",
        key: info.storageKey,
        value: encodeEntry(value, versionAfter, nowMs),
      });
      entryChanges.set(k, value);
    }
    for (const [k, info] of intent.dels) {
      // Entries of a blob being converted were never written granularly.
      if (before.has(k) && before.blob === undefined) {
        writes.push({ type: "del", keyspace: "objects", key: info.storageKey });
        entryChanges.set(k, null);
      }
    }
    const meta = metaRecord({
      objectVersion: versionAfter,
      tombstone: !liveAfter,
      entryCount,
      createdAtMs: before.live && state.meta !== undefined ? state.meta.createdAtMs : nowMs,
      updatedAtMs: nowMs,
      attributes: { ...state.meta?.attributes },
    });
    writes.push({ type: "put", keyspace: "objects", key: metaKey, value: encodeMeta(meta) });
    if (eventAfter !== undefined) {
      if (intent.event !== undefined || before.blob !== undefined) {
        writes.push({
          type: "put",
          keyspace: "objects",
          key: encodeEventConfigKey(id),
          value: intent.event?.bytes ?? encodeEvent(eventAfter),
        });
      }
    } else if (before.event !== undefined && before.blob === undefined) {
      writes.push({ type: "del", keyspace: "objects", key: encodeEventConfigKey(id) });
    }
    next = { meta, event: eventAfter, blob: before.blob === undefined ? state.blob : null };
    if (dual) {
      const blob = liveAfter ? dualBlob(id, before, intent, eventAfter) : null;
      writes.push(
        blob === null
          ? { type: "del", keyspace: "blobs", key: encodeLegacyKey(BigInt(id)) }
          : {
              type: "put",
              keyspace: "blobs",
              key: encodeLegacyKey(BigInt(id)),
              value: encodeBlob(blob),
            },
      );
      next = { meta, event: eventAfter, blob };
    }
  }
  return {
    writes,
    result: {
      versionBefore: before.version,
      versionAfter,
      changed: changed.map((c) => ({ key: c.info.key, numeric: c.info.numeric, action: c.action })),
      wrote: true,
      existedBefore: before.live,
      exists: liveAfter,
      eventConfig: intent.remove ? before.event : eventAfter,
    },
    next,
    entryChanges,
    liveDelta,
  };
}

/** The whole object after `intent` as a legacy blob (dual-write). */
function dualBlob(
  id: string,
  before: Before,
  intent: Intent,
  event: ObjectEvent | undefined,
): ObjData {
  const entries = new Map<string, { info: KeyInfo; value: OpValue }>();
  for (const key of before.keys()) {
    if (intent.dels.has(key) || intent.sets.has(key)) continue;
    const value = before.value(key);
    if (value === undefined) {
      throw new StoreError(
        "invalid_argument",
        `the value of entry ${JSON.stringify(key)} was not loaded for dual-write`,
      );
    }
    entries.set(key, { info: keyInfo(id, key), value });
  }
  for (const [key, set] of intent.sets) entries.set(key, set);
  return buildBlob(entries.values(), event);
}

/**
 * `convert_legacy`: writes a legacy blob's entries (version 0) and metadata and removes the
 * blob, atomically. A blob left beside granular metadata (written by something else after
 * a conversion) is stale: the granular record wins and the blob is dropped.
 */
function planConversion(
  id: string,
  op: StoreOp & { kind: "convert_legacy" },
  state: ObjectState,
  metaKey: Uint8Array,
  env: PlanEnv,
): MutationPlan {
  if (!isCanonicalU64(id)) {
    throw new StoreError(
      "invalid_argument",
      `only numeric ids have legacy blobs, not ${JSON.stringify(id)}`,
    );
  }
  if (op.expectedVersion !== undefined) {
    throw new StoreError("invalid_argument", "convert_legacy takes no expected version");
  }
  if (state.blob === undefined) {
    throw new StoreError("invalid_argument", "convert_legacy needs the blob state loaded");
  }
  const blobKey = encodeLegacyKey(BigInt(id));
  const live = state.meta !== undefined ? !state.meta.tombstone : state.blob !== null;
  const version = state.meta?.objectVersion ?? 0n;
  const unchanged = (
    conversion: ConvertResult,
    writes: readonly KvWriteOp[],
    liveDelta: number,
  ): MutationPlan => ({
    writes,
    result: {
      versionBefore: version,
      versionAfter: version,
      changed: NO_CHANGES,
      wrote: writes.length > 0,
      existedBefore: live,
      exists: live,
      eventConfig: live ? (state.meta === undefined ? state.blob?.event : state.event) : undefined,
    },
    next: { meta: state.meta, event: state.event, blob: writes.length > 0 ? null : state.blob },
    entryChanges: NO_ENTRY_CHANGES,
    liveDelta,
    conversion,
  });
  if (state.blob === null)
    return unchanged({ converted: false, entries: 0, blobRemoved: false }, NO_WRITES, 0);
  if (state.meta !== undefined) {
    // The granular record wins. Under dual-write the blob is its current copy and stays;
    // otherwise it is stale (a dual-write copy from an earlier phase, or written by a
    // node of the pre-granular format) and goes. It never counted as an object of its own.
    if (env.dualWrite === true)
      return unchanged({ converted: false, entries: 0, blobRemoved: false }, NO_WRITES, 0);
    return unchanged(
      { converted: false, entries: 0, blobRemoved: true },
      [{ type: "del", keyspace: "blobs", key: blobKey }],
      0,
    );
  }
  const nowMs = nowOf(op);
  const entries = blobEntries(id, state.blob);
  const writes: KvWriteOp[] =
    env.dualWrite === true ? [] : [{ type: "del", keyspace: "blobs", key: blobKey }];
  const entryChanges = new Map<string, OpValue | null>();
  for (const [k, { info, value }] of entries) {
    writes.push({
      type: "put",
      keyspace: "objects",
      key: info.storageKey,
      value: encodeEntry(value, 0n, nowMs),
    });
    entryChanges.set(k, value);
  }
  const meta = metaRecord({
    objectVersion: 0n,
    tombstone: false,
    entryCount: BigInt(entries.size),
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    attributes: {},
  });
  writes.push({ type: "put", keyspace: "objects", key: metaKey, value: encodeMeta(meta) });
  const event = state.blob.event;
  if (event !== undefined) {
    writes.push({
      type: "put",
      keyspace: "objects",
      key: encodeEventConfigKey(id),
      value: encodeEvent(event),
    });
  }
  return {
    writes,
    result: {
      versionBefore: 0n,
      versionAfter: 0n,
      changed: NO_CHANGES,
      wrote: true,
      existedBefore: true,
      exists: true,
      eventConfig: event,
    },
    next: { meta, event, blob: env.dualWrite === true ? state.blob : null },
    entryChanges,
    liveDelta: 0,
    conversion: { converted: true, entries: entries.size, blobRemoved: env.dualWrite !== true },
  };
}

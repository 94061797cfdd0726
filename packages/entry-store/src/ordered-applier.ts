// The write path of a shard: mutations are planned in order against each object's latest
// *planned* state, submitted in that order to the engine's group-commit writer, and
// acknowledged once their write is durable. The per-object lock is held while planning
// only — never through the fsync — so many mutations of the same object share one synced
// write, while reads keep seeing only durable data (they read storage, never this state).
import {
  encodeEventConfigKey,
  encodeMetadataKey,
  entryRange,
  type KeyRange,
} from "@oprc/granular-key";
import type { ChangeRecord, ObjData, ObjectMetaRecord } from "@oprc/grpc-api/messages";
import { changeLogWrites } from "./change-log.js";
import { loadAutomerge, mergeCrdtSync } from "./crdt-merge.js";
import { decodeEntryKey, keyInfo } from "./entry-keys.js";
import { KeyedLock } from "./keyed-lock.js";
import type { KvShard, KvWriteOp } from "./kv.js";
import { legacyKeyOf } from "./legacy-blobs.js";
import type { OpValue } from "./mutation-op.js";
import {
  type CrdtMerge,
  type MutationPlan,
  type ObjectState,
  type PlanEnv,
  planMutation,
  type StoreOp,
  stateNeeds,
} from "./mutation-planner.js";
import {
  type CachedObject,
  notePresence,
  ObjectStateCache,
  type PendingWrite,
  pruneDurable,
} from "./object-state-cache.js";
import {
  decodeBlob,
  decodeCounters,
  decodeEntry,
  decodeEvent,
  decodeMeta,
  encodeCounters,
} from "./records.js";
import { StoreError } from "./store-error.js";
import type { MutationResult } from "./types.js";

/** Key of the shard counters record in the `system` keyspace. */
export const COUNTERS_KEY: Uint8Array = Uint8Array.of(0x00, 0x01);

/** Options of {@link OrderedApplier}. */
export interface OrderedApplierOptions {
  readonly kv: KvShard;
  readonly shard: string;
  /** Granular storage and legacy fallback, as the planner needs them. */
  readonly env: Omit<PlanEnv, "crdt">;
  /** Sync the write-ahead log before acknowledging (default of every mutation). */
  readonly sync: boolean;
  /** Objects whose planned state is kept in memory. */
  readonly cacheSize: number;
  /** Entries read per storage page when all of an object's keys are needed. */
  readonly pageSize: number;
  /** The shard's live-object count at open. */
  readonly liveObjects: bigint;
  /**
   * Told of every mutation that wrote, once it is durable, in commit order (the order its
   * writes reached storage), before its caller is answered.
   */
  readonly onApplied?: ((id: string, result: MutationResult) => void) | undefined;
  /** Record every mutation that writes in the change log, in the same write. Default: no log. */
  readonly changeLog?:
    | {
        /** The log's head revision at open. */
        readonly head: bigint;
        /** Record new values too. */
        readonly values: boolean;
        /** Record the object's trigger configuration too. */
        readonly triggers: boolean;
        /** Record how many changed keys lay beyond this trigger fan-out cap. */
        readonly triggerFanoutCap?: number | undefined;
        /** Told of the new head and its records once a write carrying changes is durable. */
        readonly onDurable?: (head: bigint, records: readonly ChangeRecord[]) => void;
      }
    | undefined;
}

/** A planned mutation in a commit. */
interface Committed {
  readonly id: string;
  readonly entry: CachedObject;
  readonly plan: MutationPlan;
  /** The operation's timestamp (ms), for its change record. */
  readonly timestampMs: number;
}

/** What the cache knows of some entries of an object, and the keys it must read. */
interface KnownEntries {
  readonly out: Map<string, OpValue | undefined>;
  readonly missing: readonly string[];
}

/** A mutation once applied. */
export interface Applied {
  readonly result: MutationResult;
  readonly plan: MutationPlan;
}

/** Planning gave up because an earlier write failed while it ran; it starts over. */
const STALE: unique symbol = Symbol("stale");
const MAX_ATTEMPTS = 3;

/**
 * Plans, orders and commits the mutations of one shard. See the module comment; the
 * invariants are:
 * - mutations of one object are planned one at a time, in call order, each against the
 *   state the previous one left (cached metadata plus not-yet-durable entry changes);
 * - writes reach the engine in planning order, and the engine keeps that order;
 * - a caller is answered only once its write is durable, and an answer that depends on
 *   state not yet durable (a no-op, a failed CAS) waits for that state to be durable;
 * - a failed write drops every planned state, so nothing is planned on top of it again.
 */
export class OrderedApplier {
  private readonly lock = new KeyedLock();
  private readonly cache: ObjectStateCache;
  private epoch = 0;
  private plannedLive: bigint;
  private durableLive: bigint;
  /** A write carrying a counter change failed: the next write persists the counter. */
  private counterDirty = false;
  /** Last change-log revision assigned to a submitted write / to a durable one. */
  private plannedRevision: bigint;
  private durableRevision: bigint;
  private inflight = 0;
  private idle: (() => void) | undefined;
  /** The plan environment without a CRDT merge: what nearly every plan runs with. */
  private readonly plainEnv: PlanEnv;

  constructor(private readonly options: OrderedApplierOptions) {
    this.cache = new ObjectStateCache(options.cacheSize);
    this.plainEnv = { ...options.env, crdt: undefined };
    this.plannedLive = options.liveObjects;
    this.durableLive = options.liveObjects;
    this.plannedRevision = options.changeLog?.head ?? 0n;
    this.durableRevision = this.plannedRevision;
  }

  /** The change log's last durable revision (0 without a change log). */
  get changeHead(): bigint {
    return this.durableRevision;
  }

  /** Live objects of the shard, counting durable mutations only. */
  get liveObjects(): bigint {
    return this.durableLive;
  }

  /** The plan environment with `crdt` (one object for every plan without it). */
  private envWith(crdt: CrdtMerge | undefined): PlanEnv {
    return crdt === undefined ? this.plainEnv : { ...this.options.env, crdt };
  }

  /** Applies one mutation; resolves once it is durable (or needs no write). */
  async apply(op: StoreOp, sync: boolean = this.options.sync): Promise<Applied> {
    for (let attempt = 1; ; attempt++) {
      const now = this.inMemory(op);
      const planned =
        now !== undefined
          ? this.submit(op, now.entry, now.state, undefined, sync)
          : await this.lock.run(op.objectId, () => this.planAndSubmit(op, sync));
      if (planned === STALE) {
        if (attempt >= MAX_ATTEMPTS) throw staleError();
        continue;
      }
      try {
        return await planned.outcome;
      } catch (err) {
        // A no-op waited for writes it depended on, and one of them failed: plan again.
        if (err === STALE && attempt < MAX_ATTEMPTS) continue;
        throw err === STALE ? staleError() : err;
      }
    }
  }

  /** Forgets every planned state (storage was changed underneath, e.g. a snapshot install). */
  invalidate(): void {
    this.epoch++;
    this.cache.clear();
  }

  /** Forgets every planned state and restarts the live counter at `liveObjects` (after storage was replaced). */
  reset(liveObjects: bigint, changeHead = 0n): void {
    this.invalidate();
    this.plannedLive = liveObjects;
    this.durableLive = liveObjects;
    this.plannedRevision = changeHead;
    this.durableRevision = changeHead;
    this.counterDirty = false;
  }

  /** Resolves once every mutation planned so far has settled. */
  async drain(): Promise<void> {
    await this.lock.drain();
    if (this.inflight > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  /**
   * Under the object's lock: loads what the plan needs, plans, records the planned state
   * and submits the writes. Returns a promise of the outcome (not awaited under the lock).
   */
  private async planAndSubmit(
    op: StoreOp,
    sync: boolean,
  ): Promise<{ outcome: Promise<Applied> } | typeof STALE> {
    const epoch = this.epoch;
    const id = op.objectId;
    // In use from here on: the cache never evicts it under us.
    const entry = await this.entryOf(id, epoch, op);
    if (entry === undefined) return STALE;
    try {
      const loaded = await this.loadState(op, entry);
      if (epoch !== this.epoch) return STALE;
      return this.submit(op, entry, loaded.state, loaded.crdt, sync);
    } finally {
      entry.users--;
    }
  }

  /** Plans `op` on `state`, records the plan and submits its writes (nothing awaited). */
  private submit(
    op: StoreOp,
    entry: CachedObject,
    state: ObjectState,
    crdt: CrdtMerge | undefined,
    sync: boolean,
  ): { outcome: Promise<Applied> } {
    let plan: MutationPlan;
    try {
      plan = planMutation(op, state, this.envWith(crdt));
    } catch (err) {
      // A failed check (CAS) read planned state: answer once that state is durable.
      return { outcome: this.afterDurable(entry, () => Promise.reject(StoreError.from(err))) };
    }
    if (plan.writes.length === 0) {
      return {
        outcome: this.afterDurable(entry, () => Promise.resolve({ result: plan.result, plan })),
      };
    }
    const committed = [{ id: op.objectId, entry, plan, timestampMs: op.timestampMs }];
    return {
      outcome: this.commit(committed, [], sync).then(() => ({ result: plan.result, plan })),
    };
  }

  /**
   * Applies committed log operations in log order as ONE write, together with `extra`
   * writes (a Raft shard's applied index), and resolves once that write landed. A
   * deterministic refusal of an operation (failed CAS, malformed operation) is its result,
   * not a failure of the batch: every replica refuses it alike. The store must not take
   * other mutations meanwhile (a replicated shard changes only through its log).
   */
  async applyInOrder(
    ops: readonly (StoreOp | undefined)[],
    extra: readonly KvWriteOp[],
    sync: boolean,
  ): Promise<(Applied | StoreError | undefined)[]> {
    const epoch = this.epoch;
    const out: (Applied | StoreError | undefined)[] = [];
    const items: Committed[] = [];
    // One write for the whole batch; its planned changes are visible to the batch's later
    // operations at once, and become durable when the write lands.
    let land!: { resolve: () => void; reject: (e: unknown) => void };
    const done = new Promise<void>((resolve, reject) => {
      land = { resolve, reject };
    });
    done.catch(() => undefined);
    const write: PendingWrite = { settled: false, done };
    /** Plans `op` on `state`; a refusal every replica makes alike is its result. */
    const planOne = (
      op: StoreOp,
      entry: CachedObject,
      state: ObjectState,
      crdt: CrdtMerge | undefined,
    ): Committed | StoreError => {
      let plan: MutationPlan;
      try {
        plan = planMutation(op, state, this.envWith(crdt));
      } catch (err) {
        const e = StoreError.from(err);
        if (e.code === "version_mismatch" || e.code === "invalid_argument") return e;
        throw e;
      }
      // Later operations of this batch plan on top of this one.
      if (plan.writes.length > 0) this.record(entry, plan, write);
      return { id: op.objectId, entry, plan, timestampMs: op.timestampMs };
    };
    for (const op of ops) {
      if (op === undefined) {
        out.push(undefined);
        continue;
      }
      const now = epoch === this.epoch ? this.inMemory(op) : undefined;
      const planned =
        now !== undefined
          ? planOne(op, now.entry, now.state, undefined)
          : await this.lock.run(op.objectId, async () => {
              const entry = await this.entryOf(op.objectId, epoch, op);
              if (entry === undefined) return STALE;
              try {
                const { state, crdt } = await this.loadState(op, entry);
                if (epoch !== this.epoch) return STALE;
                return planOne(op, entry, state, crdt);
              } finally {
                entry.users--;
              }
            });
      if (planned === STALE) throw staleError();
      if (planned instanceof StoreError) {
        out.push(planned);
        continue;
      }
      out.push({ result: planned.plan.result, plan: planned.plan });
      if (planned.plan.writes.length > 0) items.push(planned);
    }
    try {
      await this.commit(items, extra, sync, write);
      land.resolve();
    } catch (err) {
      land.reject(err);
      throw err;
    }
    return out;
  }

  /**
   * The cached object and the state to plan `op` on, when `op` can be planned right away:
   * its object is cached with everything the plan needs, and no other mutation holds or
   * waits for the object's lock. Planning without yielding is then what the lock ensures.
   */
  private inMemory(op: StoreOp): { entry: CachedObject; state: ObjectState } | undefined {
    if (this.lock.busy(op.objectId)) return undefined;
    const entry = this.cache.get(op.objectId);
    const state = entry === undefined ? undefined : this.knownState(op, entry);
    return entry === undefined || state === undefined ? undefined : { entry, state };
  }

  /**
   * What planning `op` needs, when the cached `entry` already holds all of it (no storage
   * read, no CRDT library to load); otherwise `undefined`.
   */
  private knownState(op: StoreOp, entry: CachedObject): ObjectState | undefined {
    const needs = stateNeeds(op, this.options.env);
    if (needs.allKeys || entry.prefetched !== undefined) return undefined;
    if (needs.blobAlways && entry.blob === undefined) return undefined;
    if (op.kind === "merge_object" && hasCrdt(op.entries)) return undefined;
    pruneDurable(entry);
    const known = this.knownEntries(entry, needs.keys, needs.values);
    if (known.missing.length > 0) return undefined;
    return { meta: entry.meta, event: entry.event, blob: entry.blob, entries: known.out };
  }

  /** Loads what planning `op` needs into an {@link ObjectState}. */
  private async loadState(
    op: StoreOp,
    entry: CachedObject,
  ): Promise<{ state: ObjectState; crdt: CrdtMerge | undefined }> {
    const id = op.objectId;
    const needs = stateNeeds(op, this.options.env);
    if (needs.blobAlways && entry.blob === undefined) {
      entry.blob = (await this.readBlob(id)) ?? null;
    }
    pruneDurable(entry);
    const entries = await this.loadEntries(id, entry, needs.keys, needs.allKeys, needs.values);
    const crdt =
      op.kind === "merge_object" && hasCrdt(op.entries)
        ? mergeCrdtSync(await loadAutomerge())
        : undefined;
    return { state: { meta: entry.meta, event: entry.event, blob: entry.blob, entries }, crdt };
  }

  /**
   * The cached planned state of `id` (loaded from storage on a miss), marked in use: the
   * caller must decrement `users` when done. `undefined` when an earlier write failed meanwhile.
   */
  private async entryOf(
    id: string,
    epoch: number,
    op?: StoreOp,
  ): Promise<CachedObject | undefined> {
    const cached = this.cache.get(id);
    if (cached !== undefined) {
      cached.users++;
      return cached;
    }
    const metaKey = encodeMetadataKey(id);
    const eventKey = encodeEventConfigKey(id);
    // A miss reads the entries the operation names in the same multi-get (one round trip).
    const needs = op === undefined ? undefined : stateNeeds(op, this.options.env);
    const infos = needs === undefined || needs.allKeys ? [] : needs.keys.map((k) => keyInfo(id, k));
    const [metaRaw, eventRaw, ...entryRaws] = await this.options.kv.getMany("objects", [
      metaKey,
      eventKey,
      ...infos.map((i) => i.storageKey),
    ]);
    const meta: ObjectMetaRecord | undefined =
      metaRaw === undefined ? undefined : decodeMeta(metaRaw, metaKey);
    let blob: ObjData | null | undefined;
    if (meta === undefined) blob = (await this.readBlob(id)) ?? null;
    if (epoch !== this.epoch) return undefined;
    const entry: CachedObject = {
      meta,
      event:
        meta !== undefined && !meta.tombstone && eventRaw !== undefined
          ? decodeEvent(eventRaw, eventKey)
          : undefined,
      blob,
      pending: new Map(),
      present: new Map(),
      last: undefined,
      users: 1,
      prefetched:
        infos.length === 0 ? undefined : new Map(infos.map((info, i) => [info.key, entryRaws[i]])),
    };
    this.cache.set(id, entry);
    return entry;
  }

  private async readBlob(id: string): Promise<ObjData | undefined> {
    const key = this.options.env.legacyFallback ? legacyKeyOf(id) : undefined;
    if (key === undefined) return undefined;
    const raw = await this.options.kv.get("blobs", key);
    return raw === undefined ? undefined : decodeBlob(raw, key);
  }

  /**
   * The granular entries the plan needs: `keys` (with values when `values`), or every
   * entry key when `all`. Pending changes win over storage, which may not show them yet.
   */
  private async loadEntries(
    id: string,
    entry: CachedObject,
    keys: readonly string[],
    all: boolean,
    values: boolean,
  ): Promise<Map<string, OpValue | undefined>> {
    // Entries read with the metadata on a cache miss serve this (first) plan only.
    const prefetched = entry.prefetched;
    entry.prefetched = undefined;
    const live = entry.meta !== undefined && !entry.meta.tombstone;
    if (!live) return new Map();
    if (all) {
      const out = new Map<string, OpValue | undefined>();
      const [range] = entryRange(id) as [KeyRange];
      const it = this.options.kv.iterator("objects", {
        gte: range.gte,
        lt: range.lt,
        keysOnly: !values,
      });
      try {
        for (;;) {
          const rows = await it.next(this.options.pageSize);
          if (rows.length === 0) break;
          for (const [k, v] of rows) {
            const key = decodeEntryKey(id, k).key;
            out.set(key, values ? storedValue(v, k, key) : undefined);
          }
        }
      } finally {
        await it.close();
      }
      for (const [key, p] of entry.pending) {
        if (p.value === null) out.delete(key);
        else out.set(key, p.value);
      }
      return out;
    }
    const { out, missing } = this.knownEntries(entry, keys, values);
    if (missing.length === 0) return out;
    const infos = missing.map((k) => keyInfo(id, k));
    const raw =
      prefetched !== undefined && missing.every((k) => prefetched.has(k))
        ? missing.map((k) => prefetched.get(k))
        : await this.options.kv.getMany(
            "objects",
            infos.map((i) => i.storageKey),
          );
    for (let i = 0; i < infos.length; i++) {
      const v = raw[i];
      const info = infos[i] as (typeof infos)[number];
      // No write of this key is in flight (it has no pending change): storage is current.
      notePresence(entry, info.key, v !== undefined);
      if (v === undefined) continue;
      if (!values) {
        out.set(info.key, undefined);
        continue;
      }
      out.set(info.key, storedValue(v, info.storageKey, info.key));
    }
    return out;
  }

  /**
   * The entries `keys` of a live object as far as the cache knows them (pending changes,
   * remembered presence; values only from pending changes), and the keys it does not know
   * (none for an object that is not live: it has no entries).
   */
  private knownEntries(
    entry: CachedObject,
    keys: readonly string[],
    values: boolean,
  ): KnownEntries {
    const out = new Map<string, OpValue | undefined>();
    const missing: string[] = [];
    if (entry.meta === undefined || entry.meta.tombstone) return { out, missing };
    for (const key of keys) {
      const p = entry.pending.get(key);
      if (p !== undefined) {
        if (p.value !== null) out.set(key, p.value);
        continue;
      }
      // Presence is remembered; values are read.
      const present = values ? undefined : entry.present.get(key);
      if (present === undefined) missing.push(key);
      else if (present) out.set(key, undefined);
    }
    return { out, missing };
  }

  /** Records `plan` as the object's planned state; its entry changes wait on `write`. */
  private record(entry: CachedObject, plan: MutationPlan, write: PendingWrite | undefined): void {
    entry.meta = plan.next.meta;
    entry.event = plan.next.event;
    entry.blob = plan.next.blob;
    if (write === undefined) return;
    for (const [key, value] of plan.entryChanges) entry.pending.set(key, { value, write });
    entry.last = write;
  }

  /**
   * Submits the writes of planned mutations (plus `extra`) as one engine write, with the
   * counter when it moved, and settles them: on success their objects' pending changes
   * become durable and `onApplied` hears of each, in order; on failure every planned state
   * is dropped. `recorded`: the write the plans were already recorded with (their next
   * states and pending changes are in their cache entries).
   */
  private commit(
    items: readonly Committed[],
    extra: readonly KvWriteOp[],
    sync: boolean,
    recorded?: PendingWrite,
  ): Promise<void> {
    const writes = latestWrites(items);
    let liveDelta = 0;
    for (const { plan } of items) liveDelta += plan.liveDelta;
    const liveAfter = liveDelta === 0 ? this.plannedLive : this.plannedLive + BigInt(liveDelta);
    const withCounter = liveAfter !== this.plannedLive || this.counterDirty;
    if (withCounter) {
      writes.push({
        type: "put",
        keyspace: "system",
        key: COUNTERS_KEY,
        value: encodeCounters(liveAfter),
      });
    }
    const log = this.options.changeLog;
    const logged =
      log === undefined ? undefined : changeLogWrites(items, this.plannedRevision, log);
    if (logged !== undefined) {
      for (const w of logged.writes) writes.push(w);
      this.plannedRevision = logged.head;
    }
    for (const w of extra) writes.push(w);
    this.plannedLive = liveAfter;
    const epoch = this.epoch;
    if (writes.length === 0) return Promise.resolve();
    const written = this.options.kv.write(writes, { sync });
    const write: PendingWrite = recorded ?? { settled: false, done: written };
    if (recorded === undefined)
      for (const { entry, plan } of items) this.record(entry, plan, write);
    this.inflight++;
    // Handlers attach directly to the engine's promise, so they run in commit order and
    // before any later submission can observe state planned on a failed write.
    return written.then(
      () => {
        write.settled = true;
        this.durableLive = liveAfter;
        if (withCounter) this.counterDirty = false;
        this.settle();
        for (const { id, plan } of items) this.options.onApplied?.(id, plan.result);
        if (logged !== undefined && logged.head > this.durableRevision) {
          this.durableRevision = logged.head;
          log?.onDurable?.(logged.head, logged.records);
        }
      },
      (err: unknown): never => {
        if (epoch === this.epoch) {
          // Every state planned from here on may include this write: start over from storage.
          this.invalidate();
          this.plannedLive = this.durableLive;
          this.plannedRevision = this.durableRevision;
          this.counterDirty = true;
        }
        this.settle();
        throw StoreError.from(err, "io");
      },
    );
  }

  /** Answers with `answer()` once every write of `entry` submitted so far is durable. */
  private afterDurable(entry: CachedObject, answer: () => Promise<Applied>): Promise<Applied> {
    const last = entry.last;
    if (last === undefined || last.settled) return answer();
    return last.done.then(answer, () => Promise.reject(STALE));
  }

  private settle(): void {
    this.inflight--;
    if (this.inflight === 0 && this.idle !== undefined) {
      const idle = this.idle;
      this.idle = undefined;
      idle();
    }
  }
}

/**
 * The storage writes of `items`, in order, less every write a later item of the same object
 * overwrites: one atomic write leaves the same records either way, and a hot object updated
 * many times in one applied batch then costs one record per key, not one per update. Only
 * an object's own writes can touch its keys, so a batch whose objects are all distinct
 * (the usual case) is passed through without looking at a key.
 */
export function latestWrites(
  items: readonly { readonly id: string; readonly plan: Pick<MutationPlan, "writes"> }[],
): KvWriteOp[] {
  const writes: KvWriteOp[] = [];
  /** The keys already met (walking back) of each object that occurs more than once. */
  let later: Map<string, Set<string>> | undefined;
  if (items.length > 1) {
    const seen = new Set<string>();
    for (const { id } of items) {
      if (!seen.has(id)) seen.add(id);
      else {
        later ??= new Map();
        later.set(id, new Set());
      }
    }
  }
  if (later === undefined) {
    for (const { plan } of items) for (const w of plan.writes) writes.push(w);
    return writes;
  }
  // Walk back: the first write of a key met is its last, the one that stays.
  for (let i = items.length - 1; i >= 0; i--) {
    const { id, plan } = items[i] as (typeof items)[number];
    const keys = later.get(id);
    for (let j = plan.writes.length - 1; j >= 0; j--) {
      const w = plan.writes[j] as KvWriteOp;
      if (keys !== undefined) {
        const k = `${w.keyspace}\0${Buffer.from(w.key.buffer, w.key.byteOffset, w.key.byteLength).toString("latin1")}`;
        if (keys.has(k)) continue;
        keys.add(k);
      }
      writes.push(w);
    }
  }
  return writes.reverse();
}

function hasCrdt(entries: ReadonlyMap<string, OpValue>): boolean {
  for (const v of entries.values()) if (v.type === 1) return true;
  return false;
}

function staleError(): StoreError {
  return new StoreError(
    "io",
    "the mutation could not be planned: earlier writes of the shard kept failing",
  );
}

/** Reads the persisted live-object counter of a shard, or `undefined` when it has none. */
export async function readLiveCounter(kv: KvShard): Promise<bigint | undefined> {
  const raw = await kv.get("system", COUNTERS_KEY);
  return raw === undefined ? undefined : decodeCounters(raw, COUNTERS_KEY).liveObjects;
}

/** The value of a stored entry record; a record without one is `corrupt_record`. */
function storedValue(raw: Uint8Array | undefined, storageKey: Uint8Array, key: string): OpValue {
  const value = raw === undefined ? undefined : decodeEntry(raw, storageKey).value;
  if (value === undefined) {
    throw new StoreError("corrupt_record", `entry of key ${JSON.stringify(key)} has no value`, {
      key: storageKey.slice(),
    });
  }
  return value;
}

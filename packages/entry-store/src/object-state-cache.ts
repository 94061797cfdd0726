import type { ObjData, ObjectEvent, ObjectMetaRecord } from "@oprc/grpc-api/messages";
import type { OpValue } from "./mutation-op.js";

/** A write of one mutation, from submission until it is durable or has failed. */
export interface PendingWrite {
  /** True once the write is durable (or failed: then the whole cache was dropped). */
  settled: boolean;
  /** Settles with the write: resolves when durable, rejects when it failed. */
  readonly done: Promise<void>;
}

/**
 * The latest *planned* state of one object: its durable records plus the effects of its
 * mutations that are planned and submitted but not yet durable.
 */
export interface CachedObject {
  /** Granular metadata as the latest planned mutation left it. */
  meta: ObjectMetaRecord | undefined;
  /** Event config as the latest planned mutation left it. */
  event: ObjectEvent | undefined;
  /** Legacy blob: `null` known absent, `undefined` not loaded. */
  blob: ObjData | null | undefined;
  /**
   * Entries written (value) or removed (`null`) by mutations whose writes may not be
   * durable yet, so storage may not show them. Pruned under the object's lock once durable.
   */
  readonly pending: Map<string, { readonly value: OpValue | null; readonly write: PendingWrite }>;
  /**
   * Whether an entry is in storage (`true`) or not, for keys a read or a durable write of
   * this object showed: a plan that needs only presence (a set or delete of an entry) then
   * reads nothing. Sound because while the object is cached its entries change only
   * through this cache (a failed write or a replaced store drops the whole cache). At most
   * {@link MAX_KNOWN_KEYS} keys: see {@link notePresence}.
   */
  readonly present: Map<string, boolean>;
  /** The object's last submitted write (its mutations are durable in submission order). */
  last: PendingWrite | undefined;
  /** Planners working on the object right now (an entry in use is never evicted). */
  users: number;
  /** Used since the cache's eviction hand last passed it (see {@link ObjectStateCache}). */
  used?: boolean;
  /** Raw entries read together with the metadata on a cache miss, for the first plan only. */
  prefetched?: Map<string, Uint8Array | undefined> | undefined;
}

/**
 * A bounded cache of {@link CachedObject}s with CLOCK (second-chance) eviction: a hit only
 * marks the object used; the hand sweeps in insertion order, sparing each used object once.
 * (Moving a hit to the end of the Map — delete and re-insert — costs time linear in the
 * Map's size in V8: 33 µs per hit at 10,000 objects.) An object with writes in flight or a
 * planner at work is never evicted (its state exists nowhere else until durable), so the
 * bound can be exceeded by at most the objects with mutations in flight.
 */
export class ObjectStateCache {
  private readonly map = new Map<string, CachedObject>();
  private hand: Iterator<[string, CachedObject]> | undefined;

  constructor(private readonly capacity: number) {}

  /** Number of cached objects. */
  get size(): number {
    return this.map.size;
  }

  /** The cached object (marked used), or `undefined`. */
  get(id: string): CachedObject | undefined {
    const entry = this.map.get(id);
    if (entry !== undefined) entry.used = true;
    return entry;
  }

  /** Adds `entry`, evicting idle objects not used since the hand last passed past the capacity. */
  set(id: string, entry: CachedObject): void {
    this.map.set(id, entry);
    let excess = this.map.size - this.capacity;
    // Two sweeps at most: the first clears every use mark, so the second finds a victim
    // unless every object is busy.
    for (let steps = 2 * this.map.size; excess > 0 && steps > 0; steps--) {
      this.hand ??= this.map.entries();
      const next = this.hand.next();
      if (next.done === true) {
        this.hand = undefined;
        continue;
      }
      const [key, e] = next.value;
      if (e === entry || e.users > 0 || (e.last !== undefined && !e.last.settled)) continue;
      if (e.used === true) {
        e.used = false;
        continue;
      }
      this.map.delete(key);
      excess--;
    }
  }

  /** Drops every object (after a failed write, or when storage changed underneath). */
  clear(): void {
    this.map.clear();
    this.hand = undefined;
  }
}

/** Keys of one object whose presence is remembered (a wide object starts over when full). */
export const MAX_KNOWN_KEYS = 32;

/** Remembers whether `key` of `entry` is in storage. */
export function notePresence(entry: CachedObject, key: string, present: boolean): void {
  if (entry.present.size >= MAX_KNOWN_KEYS && !entry.present.has(key)) entry.present.clear();
  entry.present.set(key, present);
}

/**
 * Removes `entry`'s pending changes whose writes are durable (their effects are in
 * storage), remembering what they left present.
 */
export function pruneDurable(entry: CachedObject): void {
  for (const [key, p] of entry.pending) {
    if (!p.write.settled) continue;
    entry.pending.delete(key);
    notePresence(entry, key, p.value !== null);
  }
}

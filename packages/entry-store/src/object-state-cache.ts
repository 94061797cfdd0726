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
  /** The object's last submitted write (its mutations are durable in submission order). */
  last: PendingWrite | undefined;
  /** Planners working on the object right now (an entry in use is never evicted). */
  users: number;
  /** Raw entries read together with the metadata on a cache miss, for the first plan only. */
  prefetched?: Map<string, Uint8Array | undefined> | undefined;
}

/**
 * A bounded LRU of {@link CachedObject}s. An object with writes in flight or a planner at
 * work is never evicted (its state exists nowhere else until durable), so the bound can be
 * exceeded by at most the objects with mutations in flight.
 */
export class ObjectStateCache {
  private readonly map = new Map<string, CachedObject>();

  constructor(private readonly capacity: number) {}

  /** Number of cached objects. */
  get size(): number {
    return this.map.size;
  }

  /** The cached object (marked recently used), or `undefined`. */
  get(id: string): CachedObject | undefined {
    const entry = this.map.get(id);
    if (entry !== undefined) {
      this.map.delete(id);
      this.map.set(id, entry);
    }
    return entry;
  }

  /** Adds `entry`, evicting the least recently used idle objects past the capacity. */
  set(id: string, entry: CachedObject): void {
    this.map.set(id, entry);
    if (this.map.size <= this.capacity) return;
    let excess = this.map.size - this.capacity;
    for (const [key, e] of this.map) {
      if (excess === 0) break;
      if (e.users === 0 && (e.last === undefined || e.last.settled)) {
        this.map.delete(key);
        excess--;
      }
    }
  }

  /** Drops every object (after a failed write, or when storage changed underneath). */
  clear(): void {
    this.map.clear();
  }
}

/** Removes `entry`'s pending changes whose writes are durable (their effects are in storage). */
export function pruneDurable(entry: CachedObject): void {
  for (const [key, p] of entry.pending) if (p.write.settled) entry.pending.delete(key);
}

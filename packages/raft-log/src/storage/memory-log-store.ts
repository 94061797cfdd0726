import { RaftError } from "../core/raft-error.js";
import type { LogStore, PersistBatch } from "../storage-port.js";
import type { ConfState, Entry, HardState, Snapshot } from "../types.js";
import { LogState } from "./log-state.js";

/** Options of {@link createMemoryLogStore}. */
export interface MemoryLogStoreOptions {
  /**
   * When writes become durable:
   * - `"immediate"` (default): every `save()`/`compact()` is durable when it resolves
   *   (a microtask later), like a store on a disk that never fails;
   * - `"manual"`: writes stay pending until {@link MemoryLogStore.sync} — a simulated disk
   *   whose unsynced writes {@link MemoryLogStore.crash} throws away. Use this in a
   *   simulator to inject a crash between write and fsync.
   */
  readonly durability?: "immediate" | "manual";
}

/** The in-memory {@link LogStore}, with a simulated disk for crash testing. */
export interface MemoryLogStore extends LogStore {
  /** Makes every pending write durable and resolves its promise (in order). */
  sync(): void;
  /**
   * Simulates a process crash: pending (unsynced) writes are lost — the accepted view goes
   * back to the durable state and their promises reject with `RaftError("unavailable")`.
   * The store stays usable, as the restarted node's store.
   */
  crash(): void;
  /** Number of writes accepted but not yet durable. */
  readonly pending: number;
}

type Op =
  | { kind: "save"; batch: PersistBatch }
  | { kind: "compact"; index: number; snap: Snapshot };

/**
 * Creates an in-memory log store (tests and the simulator). Reads see every accepted write;
 * with `durability: "manual"` a write is acknowledged only at {@link MemoryLogStore.sync}.
 *
 * @example
 * ```ts
 * const store = createMemoryLogStore({ durability: "manual" });
 * const saved = store.save({ hardState: { term: 2, vote: 1, commit: 0 } });
 * store.crash(); // the vote is lost, and `saved` rejects: it was never acknowledged
 * ```
 */
export function createMemoryLogStore(options: MemoryLogStoreOptions = {}): MemoryLogStore {
  const manual = options.durability === "manual";
  let view = new LogState();
  const durable = new LogState();
  const queue: { op: Op; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let closed = false;

  const apply = (state: LogState, op: Op): void => {
    if (op.kind === "save") state.applyBatch(op.batch);
    else state.compact(op.index, op.snap);
  };
  const check = (): void => {
    if (closed) throw new RaftError("invalid_state", "log store is closed");
  };
  const submit = (op: Op): Promise<void> => {
    try {
      check();
      apply(view, op); // throws (and changes nothing) on an invalid write
    } catch (e) {
      return Promise.reject(e);
    }
    if (!manual) {
      apply(durable, op);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => queue.push({ op, resolve, reject }));
  };

  return {
    initialState(): { hardState: HardState; confState: ConfState } {
      check();
      return { hardState: view.hardState, confState: view.snapshot.metadata.confState };
    },
    entries: (lo: number, hi: number, maxBytes?: number): Entry[] => {
      check();
      return view.entries(lo, hi, maxBytes);
    },
    term: (index: number): number => {
      check();
      return view.term(index);
    },
    firstIndex: (): number => {
      check();
      return view.firstIndex();
    },
    lastIndex: (): number => {
      check();
      return view.lastIndex();
    },
    snapshot: (): Snapshot => {
      check();
      return view.snapshot;
    },
    save: (batch: PersistBatch): Promise<void> => submit({ kind: "save", batch }),
    compact: (index: number, snap: Snapshot): Promise<void> =>
      submit({ kind: "compact", index, snap }),
    async close(): Promise<void> {
      closed = true;
    },
    sync(): void {
      for (const item of queue.splice(0)) {
        apply(durable, item.op);
        item.resolve();
      }
    },
    crash(): void {
      const lost = queue.splice(0);
      view = new LogState();
      // Rebuild the view from the durable state (cheap: share the immutable entries).
      view.floorIndex = durable.floorIndex;
      view.floorTerm = durable.floorTerm;
      view.terms = durable.terms.slice();
      view.cache = durable.cache.slice();
      view.hardState = durable.hardState;
      view.snapshot = durable.snapshot;
      closed = false;
      for (const item of lost) {
        item.reject(new RaftError("unavailable", "crashed before the write was synced"));
      }
    },
    get pending(): number {
      return queue.length;
    },
  };
}

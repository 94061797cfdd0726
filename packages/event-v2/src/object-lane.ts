// The lane of one trigger target, shared by at-most-once firing (trigger-firing.ts) and
// at-least-once delivery (durable-delivery.ts): work waits in order, at most `limit` items
// run at once, and never two of one source object at once — so one object's triggers reach
// a target in order while other objects' go ahead.

/** The waiting and running work of one target. */
export interface ObjectLane<T extends { readonly source: string }> {
  /** Waiting, in arrival order. */
  readonly queue: T[];
  /** Running now. */
  running: number;
  /** Source objects with an item running. */
  readonly busy: Set<string>;
}

/** An empty lane. */
export function createObjectLane<T extends { readonly source: string }>(): ObjectLane<T> {
  return { queue: [], running: 0, busy: new Set() };
}

/**
 * Starts what `lane` may start: in queue order, skipping items whose source object has one
 * running. `run` starts an item and returns a promise, or `undefined` when the item already
 * finished; `settled` is told once it ended, after the lane counted it out (it usually pumps
 * the lane again).
 */
export function pumpLane<T extends { readonly source: string }>(
  lane: ObjectLane<T>,
  limit: number,
  run: (item: T) => Promise<unknown> | undefined,
  settled: (item: T) => void,
): void {
  for (let i = 0; i < lane.queue.length && lane.running < limit; ) {
    const item = lane.queue[i] as T;
    if (lane.busy.has(item.source)) {
      i++;
      continue;
    }
    lane.queue.splice(i, 1);
    lane.running++;
    lane.busy.add(item.source);
    const done = (): void => {
      lane.running--;
      lane.busy.delete(item.source);
      settled(item);
    };
    const p = run(item);
    if (p === undefined) done();
    else void p.then(done, done);
  }
}

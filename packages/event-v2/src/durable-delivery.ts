import { setTimeout as sleep } from "node:timers/promises";
import { ChangeAction, type ChangeRecord } from "@oprc/grpc-api/messages";
import type { EventV2Config } from "./event-config.js";
import type { EventMetricsHooks } from "./event-metrics.js";
import { truncationOf } from "./fanout-cap.js";
import type { ChangedKey, MutationAction, MutationContext } from "./mutation-context.js";
import { type ObjectLane, pumpLane } from "./object-lane.js";
import { callHook } from "./trigger-firing.js";
import { createTriggerInvocation, type TriggerInvocation } from "./trigger-invocation.js";
import { collectTriggers } from "./trigger-matching.js";
import { encodeTriggerPayload, triggerPayloadFields } from "./trigger-payload.js";
import type { TriggerSink } from "./trigger-sink.js";

// At-least-once trigger delivery, driven from a shard's durable change log (the opt-in
// alternative to the dispatcher's at-most-once firing). A scanner reads the log in revision
// order and hands each record's data-trigger deliveries to one lane per target function.
// A lane runs at most `perTargetConcurrency` deliveries at once and never two of one source
// object at once (per-object order); each delivery is retried with capped exponential
// backoff until it succeeds or its attempts run out (then it is dead-lettered: counted and
// reported, and the lane moves on). Every target keeps a cursor — the last revision whose
// deliveries to it have all finished — saved beside the log, so a restart resumes each
// target where it stopped: a delivery is repeated when the process died after the target
// received it and before the cursor was saved, never skipped. A lane that fills up
// (`laneBound` waiting) stops taking records from the scanner and later reads the log on
// its own until it catches up, so a slow or dead target delays only itself.

/** The change log as the delivery reads it (`EntryStore.changes` fits). */
export interface ChangeSource {
  /** The last durable revision. */
  head(): bigint;
  /** Up to `limit` records from revision `from` on, in revision order. */
  read(from: bigint, limit: number): Promise<ChangeRecord[]>;
  /** Calls `listener` after every durable write that logged changes; returns an unsubscribe. */
  subscribe(listener: (head: bigint) => void): () => void;
  /** Stored cursors by name. */
  cursors(): Promise<Map<string, bigint>>;
  /** Stores cursors (`undefined` removes one). */
  saveCursors(cursors: ReadonlyMap<string, bigint | undefined>): Promise<void>;
}

/** Retries of one delivery. */
export interface RetryPolicy {
  /** Attempts per delivery, the first included; then it is dead-lettered. Default 5. */
  readonly maxAttempts: number;
  /** Delay before the first retry, ms; doubles per retry (with jitter). Default 200. */
  readonly baseDelayMs: number;
  /** Ceiling of the delay between attempts, ms. Default 10000. */
  readonly maxDelayMs: number;
}

/** Default {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
};

/** Hooks of at-least-once delivery, beyond the dispatcher's trigger hooks. */
export interface DurableDeliveryHooks
  extends Pick<
    EventMetricsHooks,
    "onTriggerStarted" | "onTriggerSettled" | "onTriggerDispatched" | "onDepthExceeded"
  > {
  /** An attempt failed and the delivery will be tried again after `delayMs`. */
  onTriggerRetry?(
    invocation: TriggerInvocation,
    attempt: number,
    error: unknown,
    delayMs: number,
  ): void;
  /** A delivery used up its attempts and was given up (`revision` names its record). */
  onTriggerDeadLetter?(invocation: TriggerInvocation, revision: bigint, error: unknown): void;
  /** Records the delivery needed were gone from the log (compacted) when it read them. */
  onRecordsMissing?(from: bigint, to: bigint): void;
}

/** Options of {@link startDurableDelivery}. */
export interface DurableDeliveryOptions {
  readonly source: ChangeSource;
  readonly sink: TriggerSink;
  /** The shard's collection and partition (the source of every payload). */
  readonly clsId: string;
  readonly partitionId: number;
  readonly config: Pick<
    EventV2Config,
    | "maxBatchTriggerFanout"
    | "summaryKeySample"
    | "payloadFormat"
    | "triggerTimeoutMs"
    | "maxTriggerDepth"
  >;
  readonly retry?: Partial<RetryPolicy> | undefined;
  /** Deliveries in flight per target at most. Default 8. */
  readonly perTargetConcurrency?: number | undefined;
  /** Deliveries waiting per target before it reads the log on its own. Default 10000. */
  readonly laneBound?: number | undefined;
  /** How often changed cursors are saved, ms. Default 200. */
  readonly saveIntervalMs?: number | undefined;
  readonly hooks?: DurableDeliveryHooks | undefined;
  /** Told of a failure to read the log or save cursors (it retries). Default: ignored. */
  readonly onError?: ((err: unknown) => void) | undefined;
}

/** A running at-least-once delivery; see {@link startDurableDelivery}. */
export interface DurableDelivery {
  /**
   * The oldest revision some target has not finished (its record must stay in the log):
   * pass it to compaction as `holdFrom`.
   */
  readonly holdFrom: bigint;
  /** Deliveries waiting or in flight, over all targets. */
  readonly pending: number;
  /** Deliveries given up so far. */
  readonly deadLetters: number;
  /** Resolves once every record up to the log's head has been delivered (or given up). */
  caughtUp(): Promise<void>;
  /** Stops: in-flight deliveries are aborted (and repeated after a restart); cursors are saved. */
  close(): Promise<void>;
}

/** Name of the stored cursor below which every target has finished. */
export const BASE_CURSOR = "trigger";
/** Name of the stored cursor of one target function. */
export function targetCursorName(clsId: string, fnId: string): string {
  return `trigger:${clsId}\u0000${fnId}`;
}

const ACTIONS: Partial<Record<ChangeAction, MutationAction>> = {
  [ChangeAction.CREATE]: "create",
  [ChangeAction.UPDATE]: "update",
  [ChangeAction.DELETE]: "delete",
};

/** One delivery of one matched trigger of one record. */
interface Delivery {
  readonly revision: bigint;
  readonly source: string;
  readonly invocation: TriggerInvocation;
}

/** A target's lane, plus what its cursor is derived from. */
class Lane implements ObjectLane<Delivery> {
  readonly queue: Delivery[] = [];
  running = 0;
  readonly busy = new Set<string>();
  /** Unfinished deliveries per revision, in revision order. */
  readonly unfinished = new Map<bigint, number>();
  /** Set while the lane reads the log itself: the next revision it must read. */
  detachedFrom: bigint | undefined = undefined;
  catchingUp = false;
  constructor(
    readonly name: string,
    /** Everything up to here was finished before this process started. */
    readonly floor: bigint,
  ) {}
  /** The last revision whose deliveries to this target have all finished. */
  done(scanned: bigint): bigint {
    let d = scanned;
    if (this.detachedFrom !== undefined) d = this.detachedFrom - 1n;
    for (const rev of this.unfinished.keys()) {
      if (rev - 1n < d) d = rev - 1n;
      break;
    }
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
    return d > this.floor ? d : this.floor;
  }
}

/**
 * Starts delivering the data triggers of `source`'s records at least once. Without stored
 * cursors (the first start in this mode) it begins at the log's head: changes made before
 * the mode was turned on are not delivered again.
 *
 * @example
 * ```ts
 * const delivery = await startDurableDelivery({
 *   source: store.changes, sink, clsId: "orders", partitionId: 0, config: eventConfig,
 * });
 * // compaction: log.compact({ ...retention, holdFrom: delivery.holdFrom })
 * await delivery.close();
 * ```
 */
export async function startDurableDelivery(o: DurableDeliveryOptions): Promise<DurableDelivery> {
  const { source, sink, config } = o;
  const hooks = o.hooks ?? {};
  const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...o.retry };
  const perTarget = Math.max(1, o.perTargetConcurrency ?? 8);
  const laneBound = Math.max(1, o.laneBound ?? 10_000);
  const saveIntervalMs = o.saveIntervalMs ?? 200;
  const pageSize = 256;
  const stopping = new AbortController();

  const stored = await source.cursors();
  const storedBase = stored.get(BASE_CURSOR);
  /** The last revision the scanner has handed to the lanes. */
  let scanned = storedBase ?? source.head();
  const lanes = new Map<string, Lane>();
  const saved = new Map<string, bigint | undefined>();
  for (const [name, rev] of stored) {
    if (name === BASE_CURSOR) saved.set(name, rev);
    else if (name.startsWith("trigger:")) {
      saved.set(name, rev);
      lanes.set(name, new Lane(name, rev));
    }
  }
  let pending = 0;
  let deadLetters = 0;
  const inflight = new Set<AbortController>();
  let caughtUpWaiters: (() => void)[] = [];

  const laneOf = (name: string): Lane => {
    let lane = lanes.get(name);
    if (lane === undefined) {
      lane = new Lane(name, scanned);
      lanes.set(name, lane);
    }
    return lane;
  };

  /** The deliveries of `record`, by target cursor name (only `only`'s when given). */
  function deliveriesOf(record: ChangeRecord, only?: string): Map<string, Delivery[]> {
    const out = new Map<string, Delivery[]>();
    const event = record.event;
    if (event === undefined) return out;
    const changed: ChangedKey[] = [];
    for (const c of record.changes) {
      const action = ACTIONS[c.action];
      if (action !== undefined) changed.push({ key: c.key, numeric: c.numeric, action });
    }
    const ctx: MutationContext = {
      objectId: record.objectIdStr,
      clsId: o.clsId,
      partitionId: o.partitionId,
      versionBefore: record.versionBefore,
      versionAfter: record.versionAfter,
      changed,
      eventConfig: event,
    };
    const summary = truncationOf(ctx, config.maxBatchTriggerFanout, config.summaryKeySample);
    const matches = collectTriggers(ctx, event, summary?.emitted ?? changed.length);
    for (const match of matches) {
      const name = targetCursorName(match.target.clsId, match.target.fnId);
      if (only !== undefined && name !== only) continue;
      if (config.maxTriggerDepth < 1) {
        if (hooks.onDepthExceeded) callHook(() => hooks.onDepthExceeded?.(match, 1));
        continue;
      }
      const payload = encodeTriggerPayload(
        triggerPayloadFields({
          source: ctx,
          eventType: match.eventType,
          changed: match.changed,
          objectVersion: ctx.versionAfter,
          timestampMs: Number(record.timestampMs),
        }),
        config.payloadFormat,
      );
      const list = out.get(name) ?? [];
      list.push({
        revision: record.revision,
        source: record.objectIdStr,
        invocation: createTriggerInvocation(match, payload, 1),
      });
      out.set(name, list);
    }
    return out;
  }

  function enqueue(lane: Lane, list: readonly Delivery[]): void {
    const rev = (list[0] as Delivery).revision;
    lane.unfinished.set(rev, (lane.unfinished.get(rev) ?? 0) + list.length);
    for (const d of list) lane.queue.push(d);
    pending += list.length;
    pump(lane);
  }

  /** Hands a scanned record to the lanes that take records from the scanner. */
  function scan(record: ChangeRecord): void {
    for (const [name, list] of deliveriesOf(record)) {
      const lane = laneOf(name);
      if (record.revision <= lane.floor || lane.detachedFrom !== undefined) continue;
      if (lane.queue.length >= laneBound) {
        lane.detachedFrom = record.revision;
        continue;
      }
      enqueue(lane, list);
    }
  }

  /** A detached lane reads the log itself up to the scanner, then takes records again. */
  async function catchUp(lane: Lane): Promise<void> {
    if (lane.catchingUp) return;
    lane.catchingUp = true;
    try {
      while (lane.detachedFrom !== undefined && !stopping.signal.aborted) {
        if (lane.queue.length >= laneBound / 2) return;
        const from = lane.detachedFrom;
        if (from > scanned) {
          lane.detachedFrom = undefined;
          return;
        }
        const limit = Number(
          scanned - from + 1n < BigInt(pageSize) ? scanned - from + 1n : pageSize,
        );
        const records = await source.read(from, limit);
        if (stopping.signal.aborted) return;
        const first = records[0]?.revision;
        if (first === undefined || first > from) {
          const to = first === undefined ? scanned : first - 1n;
          if (hooks.onRecordsMissing) callHook(() => hooks.onRecordsMissing?.(from, to));
          lane.detachedFrom = to + 1n;
        }
        for (const record of records) {
          if (record.revision > scanned) break;
          const list = deliveriesOf(record, lane.name).get(lane.name);
          if (list !== undefined && record.revision > lane.floor) enqueue(lane, list);
          lane.detachedFrom = record.revision + 1n;
          if (lane.queue.length >= laneBound) break;
        }
      }
    } catch (err) {
      o.onError?.(err);
    } finally {
      lane.catchingUp = false;
    }
  }

  function pump(lane: Lane): void {
    pumpLane(
      lane,
      perTarget,
      (d) =>
        deliver(d).then((finished) => {
          if (!finished) return; // stopped: repeated after a restart
          const left = (lane.unfinished.get(d.revision) ?? 1) - 1;
          if (left === 0) lane.unfinished.delete(d.revision);
          else lane.unfinished.set(d.revision, left);
          dirty = true;
        }),
      () => {
        pending--;
        if (stopping.signal.aborted) return;
        pump(lane);
        if (lane.detachedFrom !== undefined && lane.queue.length < laneBound / 2)
          void catchUp(lane);
        checkCaughtUp();
      },
    );
  }

  /** One attempt: resolves with undefined on success, else the error. */
  async function attempt(inv: TriggerInvocation): Promise<unknown> {
    const ctrl = new AbortController();
    inflight.add(ctrl);
    const timer = setTimeout(
      () =>
        ctrl.abort(
          new DOMException(
            `trigger dispatch exceeded ${config.triggerTimeoutMs} ms`,
            "TimeoutError",
          ),
        ),
      config.triggerTimeoutMs,
    );
    if (hooks.onTriggerStarted) callHook(() => hooks.onTriggerStarted?.(inv));
    let outcome: "ok" | "error" | "timeout" = "ok";
    let error: unknown;
    try {
      await new Promise<void>((resolve, reject) => {
        ctrl.signal.addEventListener("abort", () => reject(ctrl.signal.reason), { once: true });
        Promise.resolve()
          .then(() => sink.dispatch(inv, { signal: ctrl.signal }))
          .then(() => resolve(), reject);
      });
    } catch (err) {
      error = err ?? new Error("trigger dispatch failed");
      outcome = err instanceof DOMException && err.name === "TimeoutError" ? "timeout" : "error";
    } finally {
      clearTimeout(timer);
      inflight.delete(ctrl);
    }
    if (hooks.onTriggerSettled) callHook(() => hooks.onTriggerSettled?.(inv, outcome));
    return error;
  }

  /** Delivers `d` until it succeeds or is given up (true), or the delivery stops (false). */
  async function deliver(d: Delivery): Promise<boolean> {
    for (let n = 1; ; n++) {
      const error = await attempt(d.invocation);
      if (stopping.signal.aborted) return false;
      if (error === undefined) {
        if (hooks.onTriggerDispatched) callHook(() => hooks.onTriggerDispatched?.(d.invocation));
        return true;
      }
      if (n >= retry.maxAttempts) {
        deadLetters++;
        if (hooks.onTriggerDeadLetter)
          callHook(() => hooks.onTriggerDeadLetter?.(d.invocation, d.revision, error));
        return true;
      }
      const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (n - 1));
      const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
      if (hooks.onTriggerRetry)
        callHook(() => hooks.onTriggerRetry?.(d.invocation, n, error, delay));
      await sleep(delay, undefined, { signal: stopping.signal }).catch(() => undefined);
      if (stopping.signal.aborted) return false;
    }
  }

  // The scanner: reads the log from `scanned + 1` whenever the head moves past it.
  let scanning: Promise<void> | undefined;
  let rescan = false;
  async function scanLoop(): Promise<void> {
    do {
      rescan = false;
      while (scanned < source.head() && !stopping.signal.aborted) {
        const from = scanned + 1n;
        const records = await source.read(from, pageSize);
        if (stopping.signal.aborted) return;
        const first = records[0]?.revision;
        if (first === undefined || first > from) {
          const to = first === undefined ? source.head() : first - 1n;
          if (hooks.onRecordsMissing) callHook(() => hooks.onRecordsMissing?.(from, to));
          scanned = to;
        }
        for (const record of records) {
          scan(record);
          scanned = record.revision;
        }
        dirty = true;
      }
    } while (rescan && !stopping.signal.aborted);
    checkCaughtUp();
  }
  function wake(): void {
    if (stopping.signal.aborted) return;
    if (scanning !== undefined) {
      rescan = true;
      return;
    }
    scanning = scanLoop()
      .catch((err: unknown) => {
        o.onError?.(err);
        // Try again shortly: a read failure must not stop delivery for good.
        setTimeout(wake, 1_000).unref();
      })
      .finally(() => {
        scanning = undefined;
        if (rescan) wake();
      });
  }

  function cursorsNow(): Map<string, bigint | undefined> {
    let base = scanned;
    const out = new Map<string, bigint | undefined>();
    const done = new Map<string, bigint>();
    for (const lane of lanes.values()) {
      const d = lane.done(scanned);
      done.set(lane.name, d);
      if (d < base) base = d;
    }
    out.set(BASE_CURSOR, base);
    for (const [name, d] of done) out.set(name, d > base ? d : undefined);
    return out;
  }

  let dirty = false;
  let saving: Promise<void> | undefined;
  async function save(now = cursorsNow()): Promise<void> {
    const changed = new Map<string, bigint | undefined>();
    for (const [name, rev] of now) {
      if (saved.get(name) !== rev && !(rev === undefined && !saved.has(name)))
        changed.set(name, rev);
    }
    dirty = false;
    if (changed.size === 0) return;
    await source.saveCursors(changed);
    for (const [name, rev] of changed) {
      if (rev === undefined) saved.delete(name);
      else saved.set(name, rev);
    }
  }
  const saver = setInterval(() => {
    if (!dirty || saving !== undefined) return;
    saving = save()
      .catch((err: unknown) => {
        dirty = true;
        o.onError?.(err);
      })
      .finally(() => {
        saving = undefined;
      });
  }, saveIntervalMs);
  saver.unref();

  function checkCaughtUp(): void {
    if (pending > 0 || scanned < source.head() || caughtUpWaiters.length === 0) return;
    for (const lane of lanes.values()) if (lane.detachedFrom !== undefined) return;
    const w = caughtUpWaiters;
    caughtUpWaiters = [];
    for (const f of w) f();
  }

  const unsubscribe = source.subscribe(() => wake());
  // First start in this mode: remember where delivery begins.
  if (storedBase === undefined) dirty = true;
  wake();

  return {
    get holdFrom() {
      return (cursorsNow().get(BASE_CURSOR) as bigint) + 1n;
    },
    get pending() {
      return pending;
    },
    get deadLetters() {
      return deadLetters;
    },
    caughtUp() {
      return new Promise<void>((resolve) => {
        caughtUpWaiters.push(resolve);
        if (scanning === undefined) wake();
        checkCaughtUp();
      });
    },
    async close() {
      if (stopping.signal.aborted) return;
      unsubscribe();
      clearInterval(saver);
      await scanning?.catch(() => undefined);
      // Unfinished deliveries keep their revisions below the saved cursors: they are
      // repeated after a restart.
      const cursors = cursorsNow();
      stopping.abort();
      for (const ctrl of inflight) ctrl.abort(new Error("trigger delivery stopped"));
      await saving;
      await save(cursors);
      for (const f of caughtUpWaiters) f();
      caughtUpWaiters = [];
    },
  };
}

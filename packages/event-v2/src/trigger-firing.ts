import type { EventV2Config } from "./event-config.js";
import type { EventMetricsHooks } from "./event-metrics.js";
import { createObjectLane, type ObjectLane, pumpLane } from "./object-lane.js";
import { createTriggerInvocation, type TriggerInvocation } from "./trigger-invocation.js";
import type { TriggerMatch } from "./trigger-matching.js";
import type { TriggerDispatchOptions, TriggerSink } from "./trigger-sink.js";

// Firing matched triggers: each becomes an invocation handed to the sink; asynchronous
// dispatches are bounded by one deadline timer. Dispatches wait in one lane per target
// function (collection + function id): a lane runs at most `perTargetConcurrency` at once and
// never two for the same source object at once, so one object's triggers to a target arrive
// in order, and a slow or dead target delays only its own lane — the dispatcher's consumer
// never waits for a dispatch. A lane holds at most `laneBound` waiting dispatches; more are
// dropped and counted as failures (delivery is at-most-once). The dispatcher's queue and
// consumer are in event-dispatcher.ts.

/** The trigger counters this module advances (fields of the dispatcher's metrics). */
export interface FiringCounters {
  triggersDispatched: number;
  triggerFailures: number;
  triggerTimeouts: number;
  triggerDepthExceeded: number;
}

/** Fires the triggers of one event; see {@link createTriggerFiring}. */
export interface TriggerFiring {
  /**
   * Queues one invocation per match at depth + 1 (skipping those past the depth limit) in
   * its target's lane; `source` names the object whose event fired them (per-object order).
   */
  fire<M extends TriggerMatch>(
    matches: readonly M[],
    depth: number,
    payloadOf: (match: M) => Uint8Array,
    source: string,
  ): void;
  /** Resolves once no lane has a dispatch waiting or in flight. */
  drained(): Promise<void>;
  /** Dispatches waiting or in flight, over all lanes. */
  readonly pending: number;
  /** Drops every waiting dispatch and aborts every one in flight (a non-draining close). */
  abortAll(reason: unknown): void;
}

/** Calls a metric hook; a throwing hook never breaks the write path or the consumer. */
export function callHook(fn: () => void): void {
  try {
    fn();
  } catch {
    // Metric hooks must never break the write path or the consumer.
  }
}

// One asynchronous dispatch. Its AbortSignal is created only when the sink reads it (most
// synchronous sinks never do).
class Inflight {
  readonly invocation: TriggerInvocation;
  deadline = 0;
  controller: AbortController | undefined = undefined;
  done = false;
  resolve: (() => void) | undefined = undefined;
  constructor(invocation: TriggerInvocation) {
    this.invocation = invocation;
  }
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }
}

/** A dispatch waiting in its target's lane. */
interface Queued {
  readonly invocation: TriggerInvocation;
  readonly source: string;
}

/** The dispatches of one target: waiting (in firing order) and running. */
type Lane = ObjectLane<Queued>;

// What the sink sees: only the signal.
class SinkOptions implements TriggerDispatchOptions {
  readonly #rec: Inflight;
  constructor(rec: Inflight) {
    this.#rec = rec;
  }
  get signal(): AbortSignal {
    return this.#rec.signal;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function timeoutError(ms: number): DOMException {
  return new DOMException(`trigger dispatch exceeded ${ms} ms`, "TimeoutError");
}

/**
 * Creates the trigger firing of one dispatcher. A synchronous sink costs no promise, timer or
 * AbortController; an asynchronous one is bounded by `triggerTimeoutMs` even when it ignores
 * its signal.
 */
export function createTriggerFiring(
  sink: TriggerSink,
  config: Pick<EventV2Config, "maxTriggerDepth" | "triggerTimeoutMs"> & {
    /** Dispatches in flight per target at most. Default 8. */
    readonly perTargetConcurrency?: number;
    /** Dispatches waiting per target at most; more are dropped. Default 10000. */
    readonly laneBound?: number;
  },
  counters: FiringCounters,
  hooks: EventMetricsHooks,
): TriggerFiring {
  const inflight = new Set<Inflight>();
  // Deadlines in start order; the timeout is constant, so this is also deadline order and
  // one timer for the earliest deadline serves every in-flight dispatch.
  let deadlines: Inflight[] = [];
  let deadlineHead = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function armTimer(): void {
    while (deadlineHead < deadlines.length && (deadlines[deadlineHead] as Inflight).done) {
      deadlineHead++;
    }
    if (deadlineHead > 1024 && deadlineHead * 2 > deadlines.length) {
      deadlines = deadlines.slice(deadlineHead);
      deadlineHead = 0;
    }
    const head = deadlines[deadlineHead];
    if (head === undefined) {
      deadlines = [];
      deadlineHead = 0;
      return;
    }
    timer = setTimeout(onTimer, Math.max(0, head.deadline - performance.now()));
  }

  function onTimer(): void {
    timer = undefined;
    const t = performance.now();
    while (deadlineHead < deadlines.length) {
      const rec = deadlines[deadlineHead] as Inflight;
      if (!rec.done) {
        if (rec.deadline > t) break;
        settle(rec, "timeout", timeoutError(config.triggerTimeoutMs));
      }
      deadlineHead++;
    }
    armTimer();
  }

  function settle(rec: Inflight, outcome: "ok" | "error" | "timeout", err?: unknown): void {
    if (rec.done) return;
    rec.done = true;
    inflight.delete(rec);
    if (inflight.size === 0 && timer !== undefined) {
      // Nothing left to time out: drop the timer so an idle or closed dispatcher holds no
      // handle that keeps the process alive.
      clearTimeout(timer);
      timer = undefined;
      deadlines = [];
      deadlineHead = 0;
    }
    if (hooks.onTriggerSettled) callHook(() => hooks.onTriggerSettled?.(rec.invocation, outcome));
    if (outcome === "ok") succeeded(rec.invocation);
    else {
      if (outcome === "timeout") rec.controller?.abort(err);
      failed(rec.invocation.match, err, outcome === "timeout");
    }
    rec.resolve?.();
  }

  function succeeded(invocation: TriggerInvocation): void {
    counters.triggersDispatched++;
    if (hooks.onTriggerDispatched) callHook(() => hooks.onTriggerDispatched?.(invocation));
  }

  function failed(match: TriggerMatch, err: unknown, timedOut: boolean): void {
    counters.triggerFailures++;
    if (timedOut) counters.triggerTimeouts++;
    if (hooks.onTriggerFailure) callHook(() => hooks.onTriggerFailure?.(match, err, timedOut));
  }

  function dispatchOne(invocation: TriggerInvocation): Promise<void> | undefined {
    const rec = new Inflight(invocation);
    if (hooks.onTriggerStarted) callHook(() => hooks.onTriggerStarted?.(invocation));
    let result: unknown;
    try {
      result = sink.dispatch(invocation, new SinkOptions(rec));
    } catch (err) {
      if (hooks.onTriggerSettled) callHook(() => hooks.onTriggerSettled?.(invocation, "error"));
      failed(invocation.match, err, false);
      return undefined;
    }
    if (!isThenable(result)) {
      if (hooks.onTriggerSettled) callHook(() => hooks.onTriggerSettled?.(invocation, "ok"));
      succeeded(invocation);
      return undefined;
    }
    rec.deadline = performance.now() + config.triggerTimeoutMs;
    inflight.add(rec);
    deadlines.push(rec);
    if (timer === undefined) armTimer();
    return new Promise<void>((resolve) => {
      rec.resolve = resolve;
      result.then(
        () => settle(rec, "ok"),
        (err: unknown) => settle(rec, "error", err),
      );
    });
  }

  const perTarget = Math.max(1, config.perTargetConcurrency ?? 8);
  const laneBound = Math.max(1, config.laneBound ?? 10_000);
  const lanes = new Map<string, Lane>();
  let pending = 0;
  let drainWaiters: (() => void)[] = [];

  function finished(): void {
    pending--;
    if (pending === 0) {
      const w = drainWaiters;
      drainWaiters = [];
      for (const f of w) f();
    }
  }

  /** Starts what the lane may start: in order, skipping objects with a dispatch in flight. */
  function pump(key: string, lane: Lane): void {
    pumpLane(
      lane,
      perTarget,
      (item) => dispatchOne(item.invocation),
      () => {
        finished();
        if (lane.queue.length === 0 && lane.running === 0) lanes.delete(key);
        else pump(key, lane);
      },
    );
  }

  return {
    fire(matches, depth, payloadOf, source) {
      if (matches.length === 0) return;
      const next = depth + 1;
      for (const match of matches) {
        if (next > config.maxTriggerDepth) {
          counters.triggerDepthExceeded++;
          if (hooks.onDepthExceeded) callHook(() => hooks.onDepthExceeded?.(match, next));
          continue;
        }
        let invocation: TriggerInvocation;
        try {
          invocation = createTriggerInvocation(match, payloadOf(match), next);
        } catch (err) {
          // e.g. a target whose fields cannot be encoded; counted, never fatal.
          failed(match, err, false);
          continue;
        }
        const r = invocation.request;
        const key = `${r.clsId}\u0000${r.fnId}`;
        let lane = lanes.get(key);
        if (lane === undefined) {
          lane = createObjectLane();
          lanes.set(key, lane);
        }
        if (lane.queue.length >= laneBound) {
          if (hooks.onTriggerDropped) callHook(() => hooks.onTriggerDropped?.(match));
          failed(
            match,
            new Error(`trigger lane of ${r.clsId}/${r.fnId} is full (${laneBound} waiting)`),
            false,
          );
          continue;
        }
        pending++;
        lane.queue.push({ invocation, source });
        pump(key, lane);
      }
    },
    drained() {
      if (pending === 0) return Promise.resolve();
      return new Promise<void>((resolve) => drainWaiters.push(resolve));
    },
    get pending() {
      return pending;
    },
    abortAll(reason) {
      for (const [key, lane] of lanes) {
        for (const item of lane.queue.splice(0)) {
          failed(item.invocation.match, reason, false);
          finished();
        }
        if (lane.running === 0) lanes.delete(key);
      }
      for (const rec of [...inflight]) {
        rec.controller?.abort(reason);
        settle(rec, "error", reason);
      }
    },
  };
}

import type { EventV2Config } from "./event-config.js";
import type { EventMetricsHooks } from "./event-metrics.js";
import { createTriggerInvocation, type TriggerInvocation } from "./trigger-invocation.js";
import type { TriggerMatch } from "./trigger-matching.js";
import type { TriggerDispatchOptions, TriggerSink } from "./trigger-sink.js";

// Firing matched triggers: each becomes an invocation handed to the sink; asynchronous
// dispatches are bounded by one deadline timer. The dispatcher's queue and consumer are in
// event-dispatcher.ts.

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
   * Dispatches one invocation per match at depth + 1 (skipping those past the depth limit).
   * Returns a promise for the asynchronous dispatches, or undefined when none is pending.
   */
  fire<M extends TriggerMatch>(
    matches: readonly M[],
    depth: number,
    payloadOf: (match: M) => Uint8Array,
  ): Promise<unknown> | undefined;
  /** Aborts and fails every dispatch still in flight (a non-draining close). */
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
  config: Pick<EventV2Config, "maxTriggerDepth" | "triggerTimeoutMs">,
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
    let result: unknown;
    try {
      result = sink.dispatch(invocation, new SinkOptions(rec));
    } catch (err) {
      failed(invocation.match, err, false);
      return undefined;
    }
    if (!isThenable(result)) {
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

  return {
    fire(matches, depth, payloadOf) {
      if (matches.length === 0) return undefined;
      const next = depth + 1;
      let pending: Promise<void>[] | undefined;
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
        const p = dispatchOne(invocation);
        if (p !== undefined) {
          pending ??= [];
          pending.push(p);
        }
      }
      return pending === undefined ? undefined : Promise.all(pending);
    },
    abortAll(reason) {
      for (const rec of [...inflight]) {
        rec.controller?.abort(reason);
        settle(rec, "error", reason);
      }
    },
  };
}

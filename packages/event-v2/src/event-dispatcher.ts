import { BoundedRing } from "./bounded-ring.js";
import type {
  DispatcherEvent,
  FunctionEvent,
  FunctionOutcome,
  MutationEvent,
  QueuedEvent,
} from "./dispatcher-event.js";
import {
  CONFIG_LIMITS,
  checkBound,
  DEFAULT_EVENT_CONFIG,
  type EventV2Config,
} from "./event-config.js";
import type { EventMetricsHooks, EventMetricsSnapshot } from "./event-metrics.js";
import { type EventSubscription, Subscription } from "./event-subscription.js";
import { EventV2Error } from "./event-v2-error.js";
import { truncationOf } from "./fanout-cap.js";
import type { MutationContext } from "./mutation-context.js";
import { createTriggerInvocation, type TriggerInvocation } from "./trigger-invocation.js";
import { collectFunctionTriggers, collectTriggers, type TriggerMatch } from "./trigger-matching.js";
import { encodeTriggerPayload, triggerPayloadFields } from "./trigger-payload.js";
import type { TriggerDispatchOptions, TriggerSink } from "./trigger-sink.js";

/** Options of {@link createEventDispatcher}; every {@link EventV2Config} field may be given. */
export interface EventDispatcherOptions extends Partial<EventV2Config> {
  /** Where fired triggers go. Without a sink, triggers are not evaluated (events still flow to subscribers). */
  readonly sink?: TriggerSink | undefined;
  /** Metric callbacks (e.g. bound to prom-client counters). */
  readonly hooks?: EventMetricsHooks | undefined;
  /** Clock for event timestamps (ms since the epoch). Default `Date.now`; injectable for tests. */
  readonly now?: (() => number) | undefined;
}

/** Options of {@link EventDispatcher.tryEnqueue}. */
export interface EnqueueOptions {
  /**
   * Depth of the invocation that caused this mutation (`triggerDepthOf(options)`); 0 for a
   * client write (default). Triggers fire at depth + 1 and are skipped past the limit.
   */
  readonly triggerDepth?: number | undefined;
}

/** Why an event was not accepted. */
export type EnqueueRejection = "queue_full" | "closed" | "disabled";

/** Result of a non-blocking enqueue. */
export type EnqueueResult =
  | { readonly accepted: true; readonly seq: number }
  | { readonly accepted: false; readonly reason: EnqueueRejection };

/** Options of {@link EventDispatcher.close}. */
export interface CloseOptions {
  /** Process what is queued before stopping (default `true`); false discards it. */
  readonly drain?: boolean | undefined;
  /** Aborting it stops a drain early: the rest of the queue is discarded, in-flight dispatches aborted. */
  readonly signal?: AbortSignal | undefined;
}

/** What a shutdown did. */
export interface ShutdownReport {
  /** Events processed between `close()` and the end of the drain. */
  readonly drained: number;
  /** Queued events discarded (not draining, or the drain was aborted). */
  readonly discarded: number;
  /** Events dropped over the dispatcher's life because the queue was full. */
  readonly queueDrops: number;
}

/** Options of {@link EventDispatcher.subscribe}. */
export interface SubscribeOptions {
  /** Buffer size of this subscriber; default the dispatcher's `broadcastBound` (256). */
  readonly bufferSize?: number | undefined;
}

/**
 * The per-shard event dispatcher (spec §5): a bounded FIFO queue, one consumer, a
 * bounded broadcast to subscribers, trigger evaluation and dispatch to a {@link TriggerSink}.
 */
export interface EventDispatcher {
  /** The effective configuration. */
  readonly config: EventV2Config;
  /**
   * Offers a committed mutation. Never blocks and never throws for a full queue: a full
   * queue drops the event, counts it and returns `{accepted:false, reason:"queue_full"}`.
   * Accepted events get the next per-shard sequence number.
   */
  tryEnqueue(ctx: MutationContext, options?: EnqueueOptions): EnqueueResult;
  /**
   * Offers a function outcome (the function-trigger entry point): after `fnId` ran on an
   * object of this shard, its `on_complete` / `on_error` triggers fire. Same queue,
   * same rules as {@link EventDispatcher.tryEnqueue}.
   */
  tryEnqueueFunctionOutcome(outcome: FunctionOutcome): EnqueueResult;
  /** Adds a subscriber with a bounded buffer. Throws `closed` after shutdown. */
  subscribe(options?: SubscribeOptions): EventSubscription;
  /** A copy of the counters. */
  metrics(): EventMetricsSnapshot;
  /** Events waiting in the queue. */
  readonly queueLength: number;
  /** Resolves once the queue is empty and the consumer has finished what it took. */
  idle(): Promise<void>;
  /** Stops accepting, drains (or discards) the queue, ends subscriptions. Idempotent. */
  close(options?: CloseOptions): Promise<ShutdownReport>;
}

function timeoutError(ms: number): DOMException {
  return new DOMException(`trigger dispatch exceeded ${ms} ms`, "TimeoutError");
}

// One dispatch. Its AbortSignal is created only when the sink reads it (most synchronous
// sinks never do).
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

/**
 * Creates the event dispatcher of one shard and starts its consumer.
 *
 * @example
 * ```ts
 * import { createEventDispatcher, eventConfigFromEnv, mutationContextFromResult } from "@oprc/event-v2";
 *
 * const dispatcher = createEventDispatcher({
 *   ...eventConfigFromEnv(process.env),
 *   sink: { dispatch: (inv, { signal }) => invoke(inv, signal) },
 * });
 * const ctx = mutationContextFromResult(result, { objectId, clsId, partitionId, eventConfig });
 * if (ctx) dispatcher.tryEnqueue(ctx);
 * await dispatcher.close();
 * ```
 */
export function createEventDispatcher(options: EventDispatcherOptions = {}): EventDispatcher {
  const d = DEFAULT_EVENT_CONFIG;
  const { maxBound, maxTimeoutMs } = CONFIG_LIMITS;
  const config: EventV2Config = Object.freeze({
    pipelineEnabled: options.pipelineEnabled ?? d.pipelineEnabled,
    queueBound: checkBound("queueBound", options.queueBound ?? d.queueBound, 1, maxBound),
    broadcastBound: checkBound(
      "broadcastBound",
      options.broadcastBound ?? d.broadcastBound,
      1,
      maxBound,
    ),
    maxBatchTriggerFanout: checkBound(
      "maxBatchTriggerFanout",
      options.maxBatchTriggerFanout ?? d.maxBatchTriggerFanout,
      0,
      maxBound,
    ),
    summaryKeySample: checkBound(
      "summaryKeySample",
      options.summaryKeySample ?? d.summaryKeySample,
      0,
      maxBound,
    ),
    payloadFormat: options.payloadFormat ?? d.payloadFormat,
    maxTriggerDepth: checkBound(
      "maxTriggerDepth",
      options.maxTriggerDepth ?? d.maxTriggerDepth,
      0,
      maxBound,
    ),
    triggerTimeoutMs: checkBound(
      "triggerTimeoutMs",
      options.triggerTimeoutMs ?? d.triggerTimeoutMs,
      1,
      maxTimeoutMs,
    ),
  });
  if (config.payloadFormat !== "protobuf" && config.payloadFormat !== "json") {
    throw new EventV2Error("invalid_config", `payloadFormat=${String(config.payloadFormat)}`, {
      variable: "payloadFormat",
    });
  }
  const sink = options.sink;
  const hooks: EventMetricsHooks = options.hooks ?? {};
  const now = options.now ?? Date.now;

  const queue = new BoundedRing<QueuedEvent>(config.queueBound);
  const subscribers = new Set<Subscription>();
  const inflight = new Set<Inflight>();
  // Deadlines in start order; the timeout is constant, so this is also deadline order and
  // one timer for the earliest deadline serves every in-flight dispatch.
  let deadlines: Inflight[] = [];
  let deadlineHead = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const m = {
    accepted: 0,
    emittedTotal: 0,
    emittedCreate: 0,
    emittedUpdate: 0,
    emittedDelete: 0,
    functionOutcomes: 0,
    truncatedBatches: 0,
    queueDrops: 0,
    triggersDispatched: 0,
    triggerFailures: 0,
    triggerTimeouts: 0,
    triggerDepthExceeded: 0,
    subscriberLost: 0,
  };

  let seq = 0;
  let closed = false;
  let busy = false;
  let wake: (() => void) | undefined;
  let idleWaiters: (() => void)[] = [];
  let drainedAfterClose = 0;
  let closeReport: Promise<ShutdownReport> | undefined;

  function safe(fn: () => void): void {
    try {
      fn();
    } catch {
      // Metric hooks must never break the write path or the consumer.
    }
  }

  function offer(build: (seq: number) => QueuedEvent): EnqueueResult {
    if (!config.pipelineEnabled) return { accepted: false, reason: "disabled" };
    if (closed) return { accepted: false, reason: "closed" };
    if (queue.length >= config.queueBound) {
      m.queueDrops++;
      if (hooks.onQueueDrop) safe(() => hooks.onQueueDrop?.());
      return { accepted: false, reason: "queue_full" };
    }
    const s = ++seq;
    queue.push(build(s));
    m.accepted++;
    if (wake !== undefined) {
      const w = wake;
      wake = undefined;
      w();
    }
    return { accepted: true, seq: s };
  }

  function checkDepth(depth: number | undefined): number {
    if (depth === undefined) return 0;
    if (!Number.isInteger(depth) || depth < 0) {
      throw new EventV2Error(
        "invalid_argument",
        `triggerDepth=${depth} is not a non-negative integer`,
      );
    }
    return depth;
  }

  function broadcast(event: DispatcherEvent): void {
    for (const sub of subscribers) {
      if (sub.deliver(event) > 0) {
        m.subscriberLost++;
        if (hooks.onSubscriberLost) safe(() => hooks.onSubscriberLost?.(1));
      }
    }
  }

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
    m.triggersDispatched++;
    if (hooks.onTriggerDispatched) safe(() => hooks.onTriggerDispatched?.(invocation));
  }

  // Hands one invocation to the sink. A synchronous sink costs no promise, timer or
  // AbortController (the signal is created on first access); an asynchronous one is
  // bounded by `triggerTimeoutMs` even when it ignores its signal.
  function dispatchOne(invocation: TriggerInvocation): Promise<void> | undefined {
    const rec = new Inflight(invocation);
    let result: unknown;
    try {
      result = (sink as TriggerSink).dispatch(invocation, new SinkOptions(rec));
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

  function failed(match: TriggerMatch, err: unknown, timedOut: boolean): void {
    m.triggerFailures++;
    if (timedOut) m.triggerTimeouts++;
    if (hooks.onTriggerFailure) safe(() => hooks.onTriggerFailure?.(match, err, timedOut));
  }

  function fire<M extends TriggerMatch>(
    matches: readonly M[],
    depth: number,
    payloadOf: (match: M) => Uint8Array,
  ): Promise<unknown> | undefined {
    if (matches.length === 0) return undefined;
    const next = depth + 1;
    let pending: Promise<void>[] | undefined;
    for (const match of matches) {
      if (next > config.maxTriggerDepth) {
        m.triggerDepthExceeded++;
        if (hooks.onDepthExceeded) safe(() => hooks.onDepthExceeded?.(match, next));
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
  }

  function processMutation(ev: MutationEvent): Promise<unknown> | undefined {
    const ctx = ev.ctx;
    broadcast(ev);
    let c = 0;
    let u = 0;
    let del = 0;
    for (const k of ctx.changed) {
      if (k.action === "create") c++;
      else if (k.action === "update") u++;
      else del++;
    }
    m.emittedCreate += c;
    m.emittedUpdate += u;
    m.emittedDelete += del;
    m.emittedTotal += c + u + del;
    if (hooks.onEmitted) {
      if (c > 0) safe(() => hooks.onEmitted?.("create", c));
      if (u > 0) safe(() => hooks.onEmitted?.("update", u));
      if (del > 0) safe(() => hooks.onEmitted?.("delete", del));
    }
    const summary = truncationOf(ctx, config.maxBatchTriggerFanout, config.summaryKeySample);
    if (summary !== undefined) {
      m.truncatedBatches++;
      if (hooks.onTruncated) safe(() => hooks.onTruncated?.(summary));
      broadcast({ kind: "truncated", seq: ev.seq, summary });
    }
    if (sink === undefined || ctx.eventConfig === undefined) return undefined;
    const limit = summary === undefined ? ctx.changed.length : summary.emitted;
    const matches = collectTriggers(ctx, ctx.eventConfig, limit);
    return fire(matches, ev.triggerDepth, (match) =>
      encodeTriggerPayload(
        triggerPayloadFields({
          source: ctx,
          eventType: match.eventType,
          changed: match.changed,
          objectVersion: ctx.versionAfter,
          timestampMs: ev.timestampMs,
        }),
        config.payloadFormat,
      ),
    );
  }

  function processFunction(ev: FunctionEvent): Promise<unknown> | undefined {
    const o = ev.outcome;
    broadcast(ev);
    m.functionOutcomes++;
    if (sink === undefined) return undefined;
    const matches = collectFunctionTriggers(o.eventConfig, o.fnId, o.outcome);
    return fire(matches, o.triggerDepth ?? 0, (match) =>
      encodeTriggerPayload(
        triggerPayloadFields({
          source: o,
          eventType: match.eventType,
          fnId: o.fnId,
          error: o.error,
          originalPayload: o.payload,
          timestampMs: ev.timestampMs,
        }),
        config.payloadFormat,
      ),
    );
  }

  function notifyIdle(): void {
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  async function consume(): Promise<void> {
    for (;;) {
      const ev = queue.shift();
      if (ev === undefined) {
        busy = false;
        notifyIdle();
        if (closed) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      busy = true;
      let pending: Promise<unknown> | undefined;
      try {
        pending = ev.kind === "mutation" ? processMutation(ev) : processFunction(ev);
      } catch {
        // A malformed event must not stop the consumer; nothing else to count it as.
      }
      if (pending !== undefined) await pending;
      if (closed) drainedAfterClose++;
    }
  }

  const consumer = consume();

  const dispatcher: EventDispatcher = {
    config,
    tryEnqueue(ctx, opts) {
      const depth = checkDepth(opts?.triggerDepth);
      return offer((s) => ({
        kind: "mutation",
        seq: s,
        ctx,
        triggerDepth: depth,
        timestampMs: now(),
      }));
    },
    tryEnqueueFunctionOutcome(outcome) {
      checkDepth(outcome.triggerDepth);
      return offer((s) => ({ kind: "function", seq: s, outcome, timestampMs: now() }));
    },
    subscribe(opts) {
      if (closed) throw new EventV2Error("closed", "the event dispatcher is closed");
      const size = checkBound("bufferSize", opts?.bufferSize ?? config.broadcastBound, 1, maxBound);
      const sub = new Subscription(size, (s) => subscribers.delete(s));
      subscribers.add(sub);
      return sub;
    },
    metrics() {
      return { ...m, queueLength: queue.length };
    },
    get queueLength() {
      return queue.length;
    },
    idle() {
      if (!busy && queue.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    close(opts) {
      if (closeReport !== undefined) return closeReport;
      closed = true;
      const drain = opts?.drain ?? true;
      let discarded = 0;
      const abortRest = (): void => {
        discarded += queue.clear();
        const reason = new EventV2Error("closed", "dispatcher closed");
        for (const rec of [...inflight]) {
          rec.controller?.abort(reason);
          settle(rec, "error", reason);
        }
      };
      if (!drain) abortRest();
      const signal = opts?.signal;
      if (signal !== undefined) {
        if (signal.aborted) abortRest();
        else signal.addEventListener("abort", abortRest, { once: true });
      }
      if (wake !== undefined) {
        const w = wake;
        wake = undefined;
        w();
      }
      closeReport = consumer.then(() => {
        signal?.removeEventListener("abort", abortRest);
        for (const sub of subscribers) sub.end();
        subscribers.clear();
        return { drained: drainedAfterClose, discarded, queueDrops: m.queueDrops };
      });
      return closeReport;
    },
  };
  return dispatcher;
}

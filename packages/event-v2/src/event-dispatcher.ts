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
  type EventV2Config,
  resolveEventConfig,
} from "./event-config.js";
import type { EventMetricsHooks, EventMetricsSnapshot } from "./event-metrics.js";
import { type EventSubscription, Subscription } from "./event-subscription.js";
import { EventV2Error } from "./event-v2-error.js";
import { truncationOf } from "./fanout-cap.js";
import type { MutationContext } from "./mutation-context.js";
import { createTriggerFiring, callHook as safe } from "./trigger-firing.js";
import { collectFunctionTriggers, collectTriggers } from "./trigger-matching.js";
import { encodeTriggerPayload, triggerPayloadFields } from "./trigger-payload.js";
import type { TriggerSink } from "./trigger-sink.js";

/** Options of {@link createEventDispatcher}; every {@link EventV2Config} field may be given. */
export interface EventDispatcherOptions extends Partial<EventV2Config> {
  /** Where fired triggers go. Without a sink, triggers are not evaluated (events still flow to subscribers). */
  readonly sink?: TriggerSink | undefined;
  /**
   * Fire data triggers (default true). False when they are delivered elsewhere, e.g. at
   * least once from the shard's change log ({@link startDurableDelivery}); function
   * triggers still fire here.
   */
  readonly dataTriggers?: boolean | undefined;
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
  const config = resolveEventConfig(options);
  const sink = options.sink;
  const hooks: EventMetricsHooks = options.hooks ?? {};
  const now = options.now ?? Date.now;
  const dataTriggers = options.dataTriggers !== false;

  const queue = new BoundedRing<QueuedEvent>(config.queueBound);
  const subscribers = new Set<Subscription>();

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

  const firing = sink === undefined ? undefined : createTriggerFiring(sink, config, m, hooks);

  function processMutation(ev: MutationEvent): void {
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
    if (firing === undefined || ctx.eventConfig === undefined || !dataTriggers) return;
    const limit = summary === undefined ? ctx.changed.length : summary.emitted;
    const matches = collectTriggers(ctx, ctx.eventConfig, limit);
    firing.fire(
      matches,
      ev.triggerDepth,
      (match) =>
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
      ctx.objectId,
    );
  }

  function processFunction(ev: FunctionEvent): void {
    const o = ev.outcome;
    broadcast(ev);
    m.functionOutcomes++;
    if (firing === undefined) return;
    const matches = collectFunctionTriggers(o.eventConfig, o.fnId, o.outcome);
    firing.fire(
      matches,
      o.triggerDepth ?? 0,
      (match) =>
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
      o.objectId,
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
      try {
        // Fired triggers wait in their target's lane; the consumer moves on at once.
        if (ev.kind === "mutation") processMutation(ev);
        else processFunction(ev);
      } catch {
        // A malformed event must not stop the consumer; nothing else to count it as.
      }
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
      const size = checkBound(
        "bufferSize",
        opts?.bufferSize ?? config.broadcastBound,
        1,
        CONFIG_LIMITS.maxBound,
      );
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
    async idle() {
      // The queue, then the dispatches it fired (which may enqueue nothing further).
      while (busy || queue.length > 0 || (firing?.pending ?? 0) > 0) {
        if (busy || queue.length > 0)
          await new Promise<void>((resolve) => idleWaiters.push(resolve));
        else await firing?.drained();
      }
    },
    close(opts) {
      if (closeReport !== undefined) return closeReport;
      closed = true;
      const drain = opts?.drain ?? true;
      let discarded = 0;
      const abortRest = (): void => {
        discarded += queue.clear();
        firing?.abortAll(new EventV2Error("closed", "dispatcher closed"));
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
      closeReport = consumer.then(async () => {
        // Draining includes the dispatches already fired; aborting (above) drops them.
        await firing?.drained();
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

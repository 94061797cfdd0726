import type { TruncationSummary } from "./fanout-cap.js";
import type { MutationAction } from "./mutation-context.js";
import type { TriggerInvocation } from "./trigger-invocation.js";
import type { TriggerMatch } from "./trigger-matching.js";

/**
 * A point-in-time copy of the dispatcher's counters (spec §5 "Metrics"). All counters
 * are monotonic except `queueLength` (a gauge).
 */
export interface EventMetricsSnapshot {
  /** Events accepted into the queue (mutations and function outcomes). */
  readonly accepted: number;
  /** Per-entry events emitted (one per changed key of each processed mutation). */
  readonly emittedTotal: number;
  /** Emitted `create` events. */
  readonly emittedCreate: number;
  /** Emitted `update` events. */
  readonly emittedUpdate: number;
  /** Emitted `delete` events. */
  readonly emittedDelete: number;
  /** Function outcomes processed (function-trigger evaluation). */
  readonly functionOutcomes: number;
  /** Mutations whose changed keys exceeded the fan-out cap. */
  readonly truncatedBatches: number;
  /** Events dropped because the queue was full. */
  readonly queueDrops: number;
  /** Events waiting in the queue now (gauge). */
  readonly queueLength: number;
  /** Trigger invocations handed to the sink and completed without error. */
  readonly triggersDispatched: number;
  /** Trigger invocations that failed (sink threw, rejected or timed out). */
  readonly triggerFailures: number;
  /** Of `triggerFailures`, those that timed out. */
  readonly triggerTimeouts: number;
  /** Triggers not fired because the depth limit was exceeded. */
  readonly triggerDepthExceeded: number;
  /** Events lost by slow subscribers, summed over all subscribers. */
  readonly subscriberLost: number;
}

/**
 * Callbacks the service binds to Prometheus counters (prom-client) or OpenTelemetry.
 * Each is optional, called synchronously, and must not throw (a throw is swallowed so
 * metrics can never break the write path or the consumer). The queue length is a gauge:
 * read it from `dispatcher.metrics().queueLength` in a gauge `collect()` callback.
 *
 * @example
 * ```ts
 * const emitted = new Counter({ name: "odgm_events_emitted_total", help: "…", labelNames: ["action"] });
 * createEventDispatcher({ hooks: { onEmitted: (action, n) => emitted.inc({ action }, n) } });
 * ```
 */
export interface EventMetricsHooks {
  /** `count` per-entry events of `action` were emitted. */
  onEmitted?(action: MutationAction, count: number): void;
  /** A mutation was truncated by the fan-out cap. */
  onTruncated?(summary: TruncationSummary): void;
  /** An event was dropped because the queue was full. */
  onQueueDrop?(): void;
  /** A trigger invocation completed. */
  onTriggerDispatched?(invocation: TriggerInvocation): void;
  /**
   * A trigger failed: the sink threw or rejected, the dispatch timed out (`timedOut`), it
   * was aborted by a non-draining close, or its request could not be built.
   */
  onTriggerFailure?(match: TriggerMatch, error: unknown, timedOut: boolean): void;
  /**
   * A dispatch to the trigger's target started: it is in flight until
   * {@link EventMetricsHooks.onTriggerSettled} (per-target in-flight gauges pair the two).
   */
  onTriggerStarted?(invocation: TriggerInvocation): void;
  /**
   * A started dispatch ended: `ok`, `error` (the sink threw or rejected, or a non-draining
   * close aborted it) or `timeout`. Also reported through the dispatched/failure hooks.
   */
  onTriggerSettled?(invocation: TriggerInvocation, outcome: "ok" | "error" | "timeout"): void;
  /**
   * A trigger was dropped before it started: its target's lane already held `laneBound`
   * waiting dispatches. Also reported through {@link EventMetricsHooks.onTriggerFailure}.
   */
  onTriggerDropped?(match: TriggerMatch): void;
  /** A trigger was not fired because `depth` exceeds `ODGM_MAX_TRIGGER_DEPTH`. */
  onDepthExceeded?(match: TriggerMatch, depth: number): void;
  /** A subscriber lost `count` events because its buffer was full. */
  onSubscriberLost?(count: number): void;
}

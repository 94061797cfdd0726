import type { TriggerInvocation } from "./trigger-invocation.js";

/** Options passed to {@link TriggerSink.dispatch}. */
export interface TriggerDispatchOptions {
  /**
   * Aborted when the dispatch exceeds `ODGM_TRIGGER_TIMEOUT_MS` (reason: a `TimeoutError`
   * `DOMException`) or the dispatcher is closed without draining. Pass it to the
   * transport (gRPC call, Zenoh put) so abandoned work stops.
   */
  readonly signal: AbortSignal;
}

/**
 * Where fired triggers go. The service implements it (direct gRPC to the function's
 * route today, a Zenoh put on `…/invokes/<fn>/async/<id>` later). Delivery is
 * at-most-once: the dispatcher calls `dispatch` once per fired trigger, counts a
 * rejection, a throw or a timeout as a trigger failure, and moves on — a failing sink
 * never stops the consumer. A sink reports an application-level failure (e.g.
 * `ResponseStatus.APP_ERROR`) by rejecting.
 *
 * @example
 * ```ts
 * const sink: TriggerSink = {
 *   async dispatch(inv, { signal }) {
 *     if (inv.kind === "object") await client.invokeObj(inv.request, { signal });
 *     else await client.invokeFn(inv.request, { signal });
 *   },
 * };
 * ```
 */
export interface TriggerSink {
  /** Delivers one trigger invocation. May return a promise; its value is ignored. */
  dispatch(invocation: TriggerInvocation, options: TriggerDispatchOptions): unknown;
}

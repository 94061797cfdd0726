import type { ObjectEvent } from "@oprc/grpc-api/messages";
import type { TruncationSummary } from "./fanout-cap.js";
import type { MutationContext } from "./mutation-context.js";
import type { FunctionOutcomeKind } from "./trigger-matching.js";

/** The outcome of one function invocation on an object handled by this node. */
export interface FunctionOutcome {
  /** The normalized object id the function ran on. */
  readonly objectId: string;
  /** The class id. */
  readonly clsId: string;
  /** The partition id. */
  readonly partitionId: number;
  /** The function that ran. */
  readonly fnId: string;
  /** `complete` fires `func_trigger[fnId].on_complete`, `error` fires `.on_error`. */
  readonly outcome: FunctionOutcomeKind;
  /** The object's trigger configuration. */
  readonly eventConfig: ObjectEvent | undefined;
  /**
   * Becomes `TriggerPayload.original_payload`. Decision: the invocation's response payload
   * on `complete`, its request payload on `error`; the service chooses.
   */
  readonly payload?: Uint8Array | undefined;
  /** Error message on `error`; sent as `EventInfo.context["error"]`. */
  readonly error?: string | undefined;
  /** The depth of the invocation that completed (`triggerDepthOf(request.options)`); default 0. */
  readonly triggerDepth?: number | undefined;
}

/** A committed mutation, as accepted by the dispatcher. */
export interface MutationEvent {
  /** Discriminant. */
  readonly kind: "mutation";
  /** Per-shard sequence number: contiguous from 1 over accepted events. */
  readonly seq: number;
  /** The mutation. */
  readonly ctx: MutationContext;
  /** Depth of the invocation that caused the mutation (0 for a client write). */
  readonly triggerDepth: number;
  /** When it was accepted (ms since the epoch); becomes `EventInfo.timestamp`. */
  readonly timestampMs: number;
}

/** A function outcome, as accepted by the dispatcher. */
export interface FunctionEvent {
  /** Discriminant. */
  readonly kind: "function";
  /** Per-shard sequence number (shared with mutation events). */
  readonly seq: number;
  /** The outcome. */
  readonly outcome: FunctionOutcome;
  /** When it was accepted (ms since the epoch). */
  readonly timestampMs: number;
}

/** Published to subscribers after a mutation event whose trigger fan-out was truncated. */
export interface TruncationEvent {
  /** Discriminant. */
  readonly kind: "truncated";
  /** The sequence number of the truncated mutation event. */
  readonly seq: number;
  /** What was evaluated and what was skipped. */
  readonly summary: TruncationSummary;
}

/** What the queue holds. */
export type QueuedEvent = MutationEvent | FunctionEvent;

/** What subscribers receive, in queue order. */
export type DispatcherEvent = MutationEvent | FunctionEvent | TruncationEvent;

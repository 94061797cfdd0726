// @oprc/event-v2 — per-entry change events for ODGM (spec §5).

export type {
  DispatcherEvent,
  FunctionEvent,
  FunctionOutcome,
  MutationEvent,
  QueuedEvent,
  TruncationEvent,
} from "./dispatcher-event.js";
// Dispatcher
export type {
  ChangeSource,
  DurableDelivery,
  DurableDeliveryHooks,
  DurableDeliveryOptions,
  RetryPolicy,
} from "./durable-delivery.js";
export {
  BASE_CURSOR,
  DEFAULT_RETRY_POLICY,
  startDurableDelivery,
  targetCursorName,
} from "./durable-delivery.js";
export type { EventV2Config, PayloadFormat } from "./event-config.js";
// Configuration
export { DEFAULT_EVENT_CONFIG, eventConfigFromEnv } from "./event-config.js";
export type {
  CloseOptions,
  EnqueueOptions,
  EnqueueRejection,
  EnqueueResult,
  EventDispatcher,
  EventDispatcherOptions,
  ShutdownReport,
  SubscribeOptions,
} from "./event-dispatcher.js";
export { createEventDispatcher } from "./event-dispatcher.js";
export type { EventMetricsHooks, EventMetricsSnapshot } from "./event-metrics.js";
export type { EventSubscription, SubscriptionItem } from "./event-subscription.js";
export type { EventV2ErrorCode, EventV2ErrorOptions } from "./event-v2-error.js";
// Errors
export { EventV2Error, isEventV2Error } from "./event-v2-error.js";
export type { TruncationSummary } from "./fanout-cap.js";
export { truncationOf } from "./fanout-cap.js";
export type {
  ChangedKey,
  MutationAction,
  MutationContext,
  MutationResultLike,
  MutationTarget,
} from "./mutation-context.js";
// Mutation contexts
export {
  changedKey,
  classifyChange,
  mutationContextFromResult,
  objectDeleteChanges,
} from "./mutation-context.js";
export type { EventInfoFields, TriggerPayloadFields } from "./payload-codec.js";
export type {
  ObjectTriggerInvocation,
  StatelessTriggerInvocation,
  TriggerInvocation,
} from "./trigger-invocation.js";
export {
  createTriggerInvocation,
  TRIGGER_DEPTH_OPTION,
  targetNamesObject,
  triggerDepthOf,
} from "./trigger-invocation.js";
export type {
  DataTriggerMatch,
  FunctionOutcomeKind,
  FunctionTriggerMatch,
  TriggerMatch,
} from "./trigger-matching.js";
// Trigger matching (pure)
export {
  collectFunctionTriggers,
  collectTriggers,
  dataTriggerFor,
  eventTypeOf,
} from "./trigger-matching.js";
export type { EventInfoInit, EventSource } from "./trigger-payload.js";
// Payloads and invocations
export {
  CONTEXT_ERROR,
  CONTEXT_KEY_STR,
  CONTEXT_OBJECT_VERSION,
  createEventInfo,
  createTriggerPayload,
  encodeTriggerPayload,
} from "./trigger-payload.js";
export type { TriggerDispatchOptions, TriggerSink } from "./trigger-sink.js";

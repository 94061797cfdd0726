import {
  type DataTrigger,
  EventType,
  type ObjectEvent,
  type TriggerTarget,
} from "@oprc/grpc-api/messages";
import type { ChangedKey, MutationAction, MutationContext } from "./mutation-context.js";

/** A data trigger that matched one changed entry. */
export interface DataTriggerMatch {
  /** Discriminant. */
  readonly kind: "data";
  /** The function to invoke. */
  readonly target: TriggerTarget;
  /** `DATA_CREATE`, `DATA_UPDATE` or `DATA_DELETE`. */
  readonly eventType: EventType;
  /** The changed entry that fired it. */
  readonly changed: ChangedKey;
}

/** A function trigger (`on_complete` / `on_error`) that matched a function outcome. */
export interface FunctionTriggerMatch {
  /** Discriminant. */
  readonly kind: "function";
  /** The function to invoke. */
  readonly target: TriggerTarget;
  /** `FUNC_COMPLETE` or `FUNC_ERROR`. */
  readonly eventType: EventType;
  /** The function whose outcome fired it. */
  readonly fnId: string;
}

/** Any trigger match. */
export type TriggerMatch = DataTriggerMatch | FunctionTriggerMatch;

/** Outcome of a function invocation, for {@link collectFunctionTriggers}. */
export type FunctionOutcomeKind = "complete" | "error";

const ACTION_EVENT: Readonly<Record<MutationAction, EventType>> = {
  create: EventType.DATA_CREATE,
  update: EventType.DATA_UPDATE,
  delete: EventType.DATA_DELETE,
};

/** Maps a {@link MutationAction} to its `EventType`. */
export function eventTypeOf(action: MutationAction): EventType {
  return ACTION_EVENT[action];
}

function targetsOf(trigger: DataTrigger, action: MutationAction): readonly TriggerTarget[] {
  switch (action) {
    case "create":
      return trigger.onCreate;
    case "update":
      return trigger.onUpdate;
    case "delete":
      return trigger.onDelete;
  }
}

const hasOwn = Object.hasOwn;

/**
 * Looks up the `DataTrigger` of one changed key: numeric keys in `data_trigger` (by u32),
 * string keys in `data_trigger_str` (spec §5). Own properties only, so keys such as
 * `"constructor"` never hit `Object.prototype`.
 */
export function dataTriggerFor(
  eventConfig: ObjectEvent,
  changed: ChangedKey,
): DataTrigger | undefined {
  const map = (changed.numeric ? eventConfig.dataTrigger : eventConfig.dataTriggerStr) as Record<
    string,
    DataTrigger | undefined
  >;
  return hasOwn(map, changed.key) ? map[changed.key] : undefined;
}

/**
 * Pure trigger matching: for each changed key (at most `limit`, in order), finds the
 * `DataTrigger` of the key and returns one match per target of the action's list
 * (`on_create` / `on_update` / `on_delete`). `"42"` is numeric and looks in
 * `data_trigger[42]`; `"042"` is a string key and looks in `data_trigger_str["042"]`.
 *
 * @param ctx the mutation.
 * @param eventConfig the object's trigger configuration; defaults to `ctx.eventConfig`.
 * @param limit evaluate only the first `limit` changed keys (the fan-out cap); default all.
 * @example
 * ```ts
 * for (const m of collectTriggers(ctx)) console.log(m.target.fnId, m.changed.key);
 * ```
 */
export function collectTriggers(
  ctx: MutationContext,
  eventConfig: ObjectEvent | undefined = ctx.eventConfig,
  limit: number = ctx.changed.length,
): DataTriggerMatch[] {
  const out: DataTriggerMatch[] = [];
  if (eventConfig === undefined) return out;
  const changed = ctx.changed;
  const n = Math.min(limit, changed.length);
  for (let i = 0; i < n; i++) {
    const c = changed[i] as ChangedKey;
    const trigger = dataTriggerFor(eventConfig, c);
    if (trigger === undefined) continue;
    const targets = targetsOf(trigger, c.action);
    if (targets.length === 0) continue;
    const eventType = ACTION_EVENT[c.action];
    for (const target of targets) out.push({ kind: "data", target, eventType, changed: c });
  }
  return out;
}

/**
 * Pure function-trigger matching: the targets of `func_trigger[fnId].on_complete` (outcome
 * `complete`) or `.on_error` (outcome `error`).
 *
 * @example
 * ```ts
 * collectFunctionTriggers(eventConfig, "resize", "error"); // targets of on_error
 * ```
 */
export function collectFunctionTriggers(
  eventConfig: ObjectEvent | undefined,
  fnId: string,
  outcome: FunctionOutcomeKind,
): FunctionTriggerMatch[] {
  const out: FunctionTriggerMatch[] = [];
  if (eventConfig === undefined || !hasOwn(eventConfig.funcTrigger, fnId)) return out;
  const trigger = eventConfig.funcTrigger[fnId];
  if (trigger === undefined) return out;
  const targets = outcome === "complete" ? trigger.onComplete : trigger.onError;
  const eventType = outcome === "complete" ? EventType.FUNC_COMPLETE : EventType.FUNC_ERROR;
  for (const target of targets) out.push({ kind: "function", target, eventType, fnId });
  return out;
}

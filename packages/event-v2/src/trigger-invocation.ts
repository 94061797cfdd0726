import { create } from "@bufbuild/protobuf";
import {
  type InvocationRequest,
  InvocationRequestSchema,
  type ObjectInvocationRequest,
  ObjectInvocationRequestSchema,
  type TriggerTarget,
} from "@oprc/grpc-api/messages";
import type { TriggerMatch } from "./trigger-matching.js";

/**
 * The invocation option carrying the trigger depth (spec §5 "Loop safety"). A client
 * call has depth 0 (option absent); a trigger fired by an event at depth d carries d+1.
 */
export const TRIGGER_DEPTH_OPTION = "oprc-trigger-depth";

/**
 * Reads the trigger depth from an invocation's `options`: absent or malformed → 0
 * (a malformed value cannot be trusted, and treating it as a client call keeps the
 * limit effective from there on).
 */
export function triggerDepthOf(options: Readonly<Record<string, string>> | undefined): number {
  const raw = options?.[TRIGGER_DEPTH_OPTION];
  if (raw === undefined || !/^[0-9]{1,9}$/.test(raw)) return 0;
  return Number(raw);
}

/** True when the target names an object (non-empty `object_id_str` or non-zero `object_id`). */
export function targetNamesObject(target: TriggerTarget): boolean {
  return (
    (target.objectIdStr !== undefined && target.objectIdStr !== "") ||
    (target.objectId !== undefined && target.objectId !== 0n)
  );
}

interface InvocationBase {
  /** The trigger that fired. */
  readonly match: TriggerMatch;
  /** The depth of this invocation (also in `request.options["oprc-trigger-depth"]`). */
  readonly depth: number;
}

/** A trigger invocation of a function bound to an object (`OprcFunction.InvokeObj`). */
export interface ObjectTriggerInvocation extends InvocationBase {
  /** Discriminant. */
  readonly kind: "object";
  /** The request; `payload` is the encoded `TriggerPayload`. */
  readonly request: ObjectInvocationRequest;
}

/** A trigger invocation of a stateless function (`OprcFunction.InvokeFn`). */
export interface StatelessTriggerInvocation extends InvocationBase {
  /** Discriminant. */
  readonly kind: "stateless";
  /** The request; `payload` is the encoded `TriggerPayload`. */
  readonly request: InvocationRequest;
}

/** What a {@link TriggerSink} is asked to deliver. */
export type TriggerInvocation = ObjectTriggerInvocation | StatelessTriggerInvocation;

/**
 * Builds the invocation of one matched trigger: `ObjectInvocationRequest` when the target
 * names an object (a string id wins over a numeric one so exactly one is sent), else
 * `InvocationRequest`. Options = the target's `req_options` plus
 * `oprc-trigger-depth` = `depth` (which overrides a user option of that name).
 */
export function createTriggerInvocation(
  match: TriggerMatch,
  payload: Uint8Array,
  depth: number,
): TriggerInvocation {
  const target = match.target;
  const options: Record<string, string> = { ...target.reqOptions };
  options[TRIGGER_DEPTH_OPTION] = String(depth);
  if (targetNamesObject(target)) {
    const byString = target.objectIdStr !== undefined && target.objectIdStr !== "";
    const request = create(ObjectInvocationRequestSchema, {
      partitionId: target.partitionId,
      objectId: byString ? 0n : (target.objectId ?? 0n),
      clsId: target.clsId,
      fnId: target.fnId,
      options,
      payload,
    });
    if (byString) request.objectIdStr = target.objectIdStr as string;
    return { kind: "object", request, match, depth };
  }
  const request = create(InvocationRequestSchema, {
    partitionId: target.partitionId,
    clsId: target.clsId,
    fnId: target.fnId,
    options,
    payload,
  });
  return { kind: "stateless", request, match, depth };
}

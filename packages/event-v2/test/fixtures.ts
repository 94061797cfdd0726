import { create, fromBinary } from "@bufbuild/protobuf";
import {
  DataTriggerSchema,
  FuncTriggerSchema,
  type ObjectEvent,
  ObjectEventSchema,
  type TriggerPayload,
  TriggerPayloadSchema,
  type TriggerTarget,
  TriggerTargetSchema,
} from "@oprc/grpc-api";
import type { ChangedKey, MutationAction, MutationContext } from "../src/mutation-context.js";
import type { TriggerInvocation } from "../src/trigger-invocation.js";
import type { TriggerSink } from "../src/trigger-sink.js";

/** A stateless target (no object). */
export function fnTarget(fnId: string, reqOptions: Record<string, string> = {}): TriggerTarget {
  return create(TriggerTargetSchema, { clsId: "handlers", partitionId: 1, fnId, reqOptions });
}

/** A target bound to a string-id object. */
export function objTarget(fnId: string, objectIdStr: string): TriggerTarget {
  return create(TriggerTargetSchema, { clsId: "handlers", partitionId: 2, fnId, objectIdStr });
}

type Lists = Partial<Record<"onCreate" | "onUpdate" | "onDelete", TriggerTarget[]>>;

/** Builds an ObjectEvent from plain maps. */
export function objectEvent(init: {
  data?: Record<number, Lists>;
  dataStr?: Record<string, Lists>;
  func?: Record<string, { onComplete?: TriggerTarget[]; onError?: TriggerTarget[] }>;
}): ObjectEvent {
  const ev = create(ObjectEventSchema);
  for (const [k, v] of Object.entries(init.data ?? {})) {
    ev.dataTrigger[Number(k)] = create(DataTriggerSchema, v);
  }
  for (const [k, v] of Object.entries(init.dataStr ?? {})) {
    ev.dataTriggerStr[k] = create(DataTriggerSchema, v);
  }
  for (const [k, v] of Object.entries(init.func ?? {})) {
    ev.funcTrigger[k] = create(FuncTriggerSchema, v);
  }
  return ev;
}

/** A mutation context for tests. */
export function mutation(
  changed: Array<[string, MutationAction]>,
  init: Partial<MutationContext> = {},
): MutationContext {
  const keys: ChangedKey[] = changed.map(([key, action]) => ({
    key,
    numeric: /^(0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= 4294967295,
    action,
  }));
  return {
    objectId: "user-1",
    clsId: "users",
    partitionId: 7,
    versionBefore: 4n,
    versionAfter: 5n,
    changed: keys,
    eventConfig: undefined,
    ...init,
  };
}

/** A sink that records every invocation and resolves at once. */
export function recordingSink(): {
  sink: TriggerSink;
  calls: TriggerInvocation[];
  signals: AbortSignal[];
} {
  const calls: TriggerInvocation[] = [];
  const signals: AbortSignal[] = [];
  return {
    calls,
    signals,
    sink: {
      dispatch(inv, { signal }) {
        calls.push(inv);
        signals.push(signal);
      },
    },
  };
}

/** Decodes the protobuf trigger payload of an invocation. */
export function payloadOf(inv: TriggerInvocation): TriggerPayload {
  return fromBinary(TriggerPayloadSchema, inv.request.payload);
}

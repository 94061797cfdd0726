import { create } from "@bufbuild/protobuf";
import {
  type EventInfo,
  EventInfoSchema,
  type EventType,
  type TriggerPayload,
  TriggerPayloadSchema,
} from "@oprc/grpc-api/messages";
import { isCanonicalU64 } from "@oprc/oprc-id";
import type { PayloadFormat } from "./event-config.js";
import type { ChangedKey } from "./mutation-context.js";
import {
  type EventInfoFields,
  encodeTriggerPayloadBinary,
  encodeTriggerPayloadJson,
  type TriggerPayloadFields,
} from "./payload-codec.js";

/** Context key carrying a string entry key, for consumers older than `EventInfo.key_str`. */
export const CONTEXT_KEY_STR = "key_str";
/** Context key carrying the object version after the mutation (data events). */
export const CONTEXT_OBJECT_VERSION = "object_version";
/** Context key carrying the error message of a failed invocation (function error events). */
export const CONTEXT_ERROR = "error";

/** The object an event is about. */
export interface EventSource {
  /** The normalized object id; numeric ids as canonical decimal. */
  readonly objectId: string;
  /** The class id. */
  readonly clsId: string;
  /** The partition id. */
  readonly partitionId: number;
}

/** Inputs of {@link createEventInfo}. */
export interface EventInfoInit {
  /** The source object. */
  readonly source: EventSource;
  /** The event type. */
  readonly eventType: EventType;
  /** Milliseconds since the Unix epoch. */
  readonly timestampMs: number;
  /** The changed entry (data events). */
  readonly changed?: ChangedKey | undefined;
  /** The function whose outcome this is (function events). */
  readonly fnId?: string | undefined;
  /** The object version after the mutation (data events); copied to `context["object_version"]`. */
  readonly objectVersion?: bigint | undefined;
  /** The error message (function error events); copied to `context["error"]`. */
  readonly error?: string | undefined;
}

// The canonical-u64 rule, skipping the scan for ids that do not start with a digit.
function isNumericId(id: string): boolean {
  const c = id.charCodeAt(0);
  return c >= 48 && c <= 57 && isCanonicalU64(id);
}

/**
 * The plain fields of the `TriggerPayload` of one event, without building protobuf-es
 * messages (the dispatcher's hot path encodes these directly). Internal.
 */
export function triggerPayloadFields(
  init: EventInfoInit & { readonly originalPayload?: Uint8Array | undefined },
): TriggerPayloadFields {
  const { source, changed } = init;
  const context: Record<string, string> = {};
  let key: number | undefined;
  let keyStr: string | undefined;
  if (changed !== undefined) {
    if (changed.numeric) key = Number(changed.key);
    else {
      keyStr = changed.key;
      context[CONTEXT_KEY_STR] = changed.key;
    }
  }
  if (init.objectVersion !== undefined)
    context[CONTEXT_OBJECT_VERSION] = String(init.objectVersion);
  if (init.error !== undefined) context[CONTEXT_ERROR] = init.error;
  const objectId = source.objectId;
  return {
    eventInfo: {
      sourceClsId: source.clsId,
      sourcePartitionId: source.partitionId,
      sourceObjectId: isNumericId(objectId) ? BigInt(objectId) : 0n,
      eventType: init.eventType,
      fnId: init.fnId,
      key,
      timestamp: BigInt(Math.trunc(init.timestampMs)),
      context,
      sourceObjectIdStr: objectId,
      keyStr,
    },
    originalPayload: init.originalPayload,
  };
}

/**
 * Builds the `EventInfo` of one event (spec §5/§6):
 * `source_object_id` = the u64 when the id is canonical u64 decimal (else 0),
 * `source_object_id_str` = the id, always (fixing the Rust defect that lost string ids);
 * numeric keys set `key`, string keys set `key_str` and `context["key_str"]`;
 * `context["object_version"]` = the version after a mutation, `context["error"]` = the
 * error of a failed function.
 */
export function createEventInfo(init: EventInfoInit): EventInfo {
  const f = triggerPayloadFields(init).eventInfo as EventInfoFields;
  const info = create(EventInfoSchema, {
    sourceClsId: f.sourceClsId,
    sourcePartitionId: f.sourcePartitionId,
    sourceObjectId: f.sourceObjectId,
    sourceObjectIdStr: f.sourceObjectIdStr as string,
    eventType: f.eventType as EventType,
    timestamp: f.timestamp,
    context: f.context,
  });
  if (f.key !== undefined) info.key = f.key;
  if (f.keyStr !== undefined) info.keyStr = f.keyStr;
  if (f.fnId !== undefined) info.fnId = f.fnId;
  return info;
}

/**
 * Builds a `TriggerPayload{event_info, original_payload}` message.
 *
 * @example
 * ```ts
 * const payload = createTriggerPayload({
 *   source: { objectId: "user-1", clsId: "users", partitionId: 0 },
 *   eventType: EventType.DATA_UPDATE,
 *   changed: { key: "email", numeric: false, action: "update" },
 *   timestampMs: Date.now(),
 * });
 * const bytes = encodeTriggerPayload(payload, "protobuf");
 * ```
 */
export function createTriggerPayload(
  init: EventInfoInit & { readonly originalPayload?: Uint8Array | undefined },
): TriggerPayload {
  const payload = create(TriggerPayloadSchema, { eventInfo: createEventInfo(init) });
  if (init.originalPayload !== undefined) payload.originalPayload = init.originalPayload;
  return payload;
}

/**
 * Encodes a trigger payload: `protobuf` = binary wire format (default), `json` = proto3
 * canonical JSON as UTF-8 bytes (enum names, u64 as strings, bytes as base64). Accepts a
 * generated `TriggerPayload`; the output is byte-identical to protobuf-es `toBinary` /
 * `toJsonString` (UTF-8), from a fixed-shape writer. The result is a view into a shared
 * 64 KiB slab (like Node's Buffer pool) for payloads up to 4 KiB.
 */
export function encodeTriggerPayload(
  payload: TriggerPayload | TriggerPayloadFields,
  format: PayloadFormat,
): Uint8Array {
  return format === "json"
    ? encodeTriggerPayloadJson(payload)
    : encodeTriggerPayloadBinary(payload);
}

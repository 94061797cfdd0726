import { create } from "@bufbuild/protobuf";
import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import { type ValData, ValDataSchema, ValType } from "@oprc/grpc-api";
import { GatewayError } from "./gateway-error.js";

/** JSON names of {@link ValType} (proto3 canonical JSON). */
export type ValTypeName = "VAL_TYPE_BYTE" | "VAL_TYPE_CRDT_MAP";

/**
 * The JSON form of a stored value in responses. `data` (base64) and `type` are always there
 * (they are the proto3 JSON of `ValData`, so the bytes round-trip exactly); `value` is added
 * when the bytes are a UTF-8 JSON text of type `VAL_TYPE_BYTE`, which is what a
 * `{"value": …}` write stores.
 */
export interface ValueJson {
  type: ValTypeName;
  data: string;
  value?: unknown;
}

const TYPE_NAMES: Record<number, ValTypeName> = {
  [ValType.BYTE]: "VAL_TYPE_BYTE",
  [ValType.CRDT_MAP]: "VAL_TYPE_CRDT_MAP",
};

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const BASE64 = /^(?:[A-Za-z0-9+/]*={0,2}|[A-Za-z0-9_-]*={0,2})$/;

/** The JSON name of a value type (unknown numbers, from newer peers, are shown as numbers). */
export function valTypeName(type: ValType): ValTypeName | number {
  return TYPE_NAMES[type] ?? type;
}

/**
 * Parses a value type given as its JSON name (`"VAL_TYPE_CRDT_MAP"`), its short name
 * (`"CRDT_MAP"`) or its number.
 *
 * @throws {GatewayError} `unprocessable_entity` for anything else.
 */
export function parseValType(raw: unknown, where: string): ValType {
  if (raw === 0 || raw === "VAL_TYPE_BYTE" || raw === "BYTE") return ValType.BYTE;
  if (raw === 1 || raw === "VAL_TYPE_CRDT_MAP" || raw === "CRDT_MAP") return ValType.CRDT_MAP;
  throw new GatewayError(
    "unprocessable_entity",
    `${where}: type must be "VAL_TYPE_BYTE" or "VAL_TYPE_CRDT_MAP", got ${JSON.stringify(raw)}`,
  );
}

/**
 * Decodes standard or URL-safe base64 (padding optional).
 *
 * @throws {GatewayError} `unprocessable_entity` for anything that is not base64.
 */
export function decodeBase64(raw: unknown, where: string): Uint8Array {
  if (typeof raw !== "string" || !BASE64.test(raw) || raw.replace(/=+$/, "").length % 4 === 1) {
    throw new GatewayError("unprocessable_entity", `${where} must be a base64 string`);
  }
  return base64Decode(raw);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses the JSON request form of one value:
 * - `{"value": <any JSON>}` stores the UTF-8 JSON text of `<any JSON>` as `VAL_TYPE_BYTE`;
 * - `{"data": "<base64>", "type"?: "VAL_TYPE_BYTE" | "VAL_TYPE_CRDT_MAP"}` stores the bytes
 *   as given (this is the proto3 JSON of `ValData`).
 *
 * @throws {GatewayError} `unprocessable_entity` when the JSON does not have this shape.
 */
export function parseValueJson(json: unknown, where: string): ValData {
  if (!isPlainObject(json)) {
    throw new GatewayError(
      "unprocessable_entity",
      `${where} must be a JSON object with "value" or "data"`,
    );
  }
  for (const field of Object.keys(json)) {
    if (field !== "value" && field !== "data" && field !== "type") {
      throw new GatewayError(
        "unprocessable_entity",
        `${where} has unknown field "${field}"; expected "value", or "data" with an optional "type"`,
      );
    }
  }
  const hasValue = Object.hasOwn(json, "value");
  const hasData = Object.hasOwn(json, "data");
  if (hasValue === hasData) {
    throw new GatewayError(
      "unprocessable_entity",
      `${where} needs exactly one of "value" and "data"`,
    );
  }
  const type = Object.hasOwn(json, "type") ? parseValType(json.type, where) : ValType.BYTE;
  if (hasValue) {
    if (type !== ValType.BYTE) {
      throw new GatewayError(
        "unprocessable_entity",
        `${where}: a JSON "value" is stored as VAL_TYPE_BYTE; give a CRDT map as base64 "data"`,
      );
    }
    return create(ValDataSchema, { data: encoder.encode(JSON.stringify(json.value)), type });
  }
  return create(ValDataSchema, { data: decodeBase64(json.data, `${where}.data`), type });
}

/** Renders a stored value as {@link ValueJson}. */
export function valueToJson(value: ValData): ValueJson & { type: ValTypeName | number } {
  const out: { type: ValTypeName | number; data: string; value?: unknown } = {
    type: valTypeName(value.type),
    data: base64Encode(value.data),
  };
  if (value.type === ValType.BYTE && value.data.length > 0) {
    const parsed = parseJsonText(value.data);
    if (parsed.ok) out.value = parsed.value;
  }
  return out as ValueJson & { type: ValTypeName | number };
}

function parseJsonText(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false } {
  // Cheap pre-check on the first non-blank byte before decoding and parsing.
  let i = 0;
  while (
    i < bytes.length &&
    (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)
  )
    i++;
  const c = bytes[i];
  if (c === undefined) return { ok: false };
  const plausible =
    c === 0x7b ||
    c === 0x5b ||
    c === 0x22 ||
    c === 0x2d ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x74 ||
    c === 0x66 ||
    c === 0x6e;
  if (!plausible) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(strictDecoder.decode(bytes)) };
  } catch {
    return { ok: false };
  }
}

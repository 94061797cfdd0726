import { create, fromBinary, fromJson } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import {
  BatchSetValuesRequestSchema,
  type ObjData,
  ObjDataSchema,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api";
import type { Context } from "hono";
import { GatewayError } from "./gateway-error.js";
import { BINARY_TYPE, bodyKind, JSON_TYPE, PROTOBUF_TYPE } from "./media.js";
import { parseStrictJson } from "./strict-json.js";
import { decodeBase64, parseValType, parseValueJson } from "./value-json.js";

// Request bodies, headers and query parameters of the REST routes, each turned into the
// DataService's types or refused with a GatewayError that names what was wrong.

export const U32_MAX = 0xffff_ffff;
const U64_MAX = 0xffff_ffff_ffff_ffffn;
/** Names the value type of a raw (`application/octet-stream`) value body or answer. */
export const VAL_TYPE_HEADER = "x-oprc-val-type";
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export async function readBody(c: Context): Promise<Uint8Array> {
  return new Uint8Array(await c.req.arrayBuffer());
}

function parseJsonBytes(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (cause) {
    throw new GatewayError("bad_request", "JSON body is not valid UTF-8", { cause });
  }
  return parseStrictJson(text);
}

function binaryMessage<T>(decode: () => T, what: string): T {
  try {
    return decode();
  } catch (cause) {
    throw new GatewayError(
      "bad_request",
      `body is not a binary ${what}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

/** `If-Match: "3"` (or `W/"3"`, or `3`) → 3n; no header → undefined. */
export function parseIfMatch(header: string | undefined): bigint | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(?:W\/)?"?([0-9]{1,20})"?\s*$/.exec(header);
  const digits = m?.[1];
  if (digits === undefined || BigInt(digits) > U64_MAX) {
    throw new GatewayError(
      "bad_request",
      `If-Match must be one object version such as "3", got ${JSON.stringify(header)}`,
    );
  }
  return BigInt(digits);
}

export function etag(version: bigint): string {
  return `"${version}"`;
}

function parseVersion(raw: unknown, where: string): bigint {
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
  if (typeof raw === "string" && /^[0-9]{1,20}$/.test(raw) && BigInt(raw) <= U64_MAX) {
    return BigInt(raw);
  }
  throw new GatewayError(
    "unprocessable_entity",
    `${where} must be an unsigned 64-bit integer (number or decimal string)`,
  );
}

/** The `limit` query parameter: absent or empty → 0 (the server's default page size). */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 0;
  if (!/^[0-9]{1,10}$/.test(raw) || Number(raw) > U32_MAX) {
    throw new GatewayError(
      "bad_request",
      `limit must be an integer in 0..${U32_MAX}, got "${raw}"`,
    );
  }
  return Number(raw);
}

/** The `cursor` query parameter as the request's optional `cursor` field. */
export function cursorField(raw: string | undefined): { cursor?: Uint8Array } {
  if (raw === undefined || raw === "") return {};
  try {
    return { cursor: decodeBase64(raw, "cursor") };
  } catch (cause) {
    throw new GatewayError("bad_request", "cursor must be the nextCursor of a previous page", {
      cause,
    });
  }
}

/** A page's `nextCursor` as it appears in JSON (base64url). */
export function cursorText(cursor: Uint8Array): string {
  return base64Encode(cursor, "url");
}

/** An object body: JSON or binary `oprc.ObjData`; an empty body is an empty object. */
export async function readObjectBody(c: Context): Promise<ObjData> {
  const bytes = await readBody(c);
  if (bytes.length === 0) return create(ObjDataSchema);
  const kind = bodyKind(c.req.header("content-type"));
  if (kind === "json") {
    const json = parseJsonBytes(bytes);
    try {
      return fromJson(ObjDataSchema, json as never);
    } catch (cause) {
      throw new GatewayError(
        "unprocessable_entity",
        `body is not an oprc.ObjData: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
  if (kind === "protobuf")
    return binaryMessage(() => fromBinary(ObjDataSchema, bytes), "oprc.ObjData");
  throw new GatewayError(
    "unsupported_media_type",
    `object bodies must be ${JSON_TYPE} or ${PROTOBUF_TYPE}; got ${c.req.header("content-type") ?? "no Content-Type"}`,
  );
}

/** A value body: JSON (`{"value": …}` or `{"data": "<base64>"}`), raw bytes or `oprc.ValData`. */
export async function readValueBody(c: Context): Promise<ValData> {
  const header = c.req.header("content-type");
  const kind = bodyKind(header);
  const bytes = await readBody(c);
  if (kind === "json") return parseValueJson(parseJsonBytes(bytes), "body");
  if (kind === "binary") {
    const typeHeader = c.req.header(VAL_TYPE_HEADER);
    let type = 0;
    if (typeHeader !== undefined) {
      try {
        type = parseValType(typeHeader, VAL_TYPE_HEADER);
      } catch (cause) {
        throw new GatewayError("bad_request", (cause as GatewayError).rawMessage, { cause });
      }
    }
    return create(ValDataSchema, { data: bytes, type });
  }
  if (kind === "protobuf")
    return binaryMessage(() => fromBinary(ValDataSchema, bytes), "oprc.ValData");
  throw new GatewayError(
    "unsupported_media_type",
    `value bodies must be ${JSON_TYPE} ({"value": …} or {"data": "<base64>"}), ${BINARY_TYPE} or ${PROTOBUF_TYPE}; got ${header ?? "no Content-Type"}`,
  );
}

/** What a batch body asks for. */
export interface BatchBody {
  values: Record<string, ValData>;
  deleteKeys: string[];
  expected: bigint | undefined;
}

/** A batch body: JSON or binary `oprc.BatchSetValuesRequest` (its identity fields are ignored). */
export async function readBatchBody(c: Context): Promise<BatchBody> {
  const header = c.req.header("content-type");
  const kind = bodyKind(header);
  const bytes = await readBody(c);
  if (kind === "json") return parseBatchJson(parseJsonBytes(bytes));
  if (kind === "protobuf") {
    const msg = binaryMessage(
      () => fromBinary(BatchSetValuesRequestSchema, bytes),
      "oprc.BatchSetValuesRequest",
    );
    return { values: msg.values, deleteKeys: msg.deleteKeys, expected: msg.expectedObjectVersion };
  }
  throw new GatewayError(
    "unsupported_media_type",
    `batch bodies must be ${JSON_TYPE} or ${PROTOBUF_TYPE}; got ${header ?? "no Content-Type"}`,
  );
}

function parseBatchJson(json: unknown): BatchBody {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new GatewayError("unprocessable_entity", "batch body must be a JSON object");
  }
  const values: Record<string, ValData> = {};
  let deleteKeys: string[] = [];
  let expected: bigint | undefined;
  for (const [field, raw] of Object.entries(json as Record<string, unknown>)) {
    if (raw === null) continue;
    switch (field) {
      case "values": {
        if (typeof raw !== "object" || Array.isArray(raw)) {
          throw new GatewayError("unprocessable_entity", "values must be an object of key → value");
        }
        for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
          values[k] = parseValueJson(v, `values[${JSON.stringify(k)}]`);
        }
        break;
      }
      case "delete_keys":
      case "deleteKeys": {
        if (!Array.isArray(raw) || !raw.every((k) => typeof k === "string")) {
          throw new GatewayError("unprocessable_entity", "delete_keys must be an array of strings");
        }
        deleteKeys = raw as string[];
        break;
      }
      case "expected_object_version":
      case "expectedObjectVersion":
        expected = parseVersion(raw, field);
        break;
      default:
        throw new GatewayError(
          "unprocessable_entity",
          `batch body has unknown field "${field}"; expected values, delete_keys, expected_object_version`,
        );
    }
  }
  return { values, deleteKeys, expected };
}

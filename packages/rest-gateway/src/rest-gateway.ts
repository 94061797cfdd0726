import { create, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import type { CallOptions, Client } from "@connectrpc/connect";
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import {
  BatchSetValuesRequestSchema,
  CapabilitiesResponseSchema,
  type DataService,
  type InvocationResponse,
  type ObjData,
  ObjDataSchema,
  ObjMetaSchema,
  type OprcFunction,
  ResponseStatus,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api";
import {
  createTidClock,
  hashId,
  type NormalizeOptions,
  partitionOf,
  type TidClock,
} from "@oprc/oprc-id";
import type { Context, Env, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { methodNotAllowed } from "hono/method-not-allowed";
import { GatewayError } from "./gateway-error.js";
import { BINARY_TYPE, bodyKind, JSON_TYPE, negotiate, PROTOBUF_TYPE } from "./media.js";
import { METRICS_ROUTE, ROUTES } from "./openapi-routes.js";
import {
  keyRef,
  objectRef,
  parseKeySegment,
  parseNameSegment,
  parseObjectSegment,
  parsePartitionSegment,
  rawPathSegments,
} from "./path-segments.js";
import { decodeBase64, parseValType, parseValueJson, valueToJson } from "./value-json.js";

/** Options of {@link createRestGateway}. */
export interface RestGatewayOptions {
  /**
   * The data service, as a Connect client: over `createRouterTransport` inside `odgm`, or over
   * `createGrpcTransport` / `createConnectTransport` in front of a remote node. Required.
   */
  data: Client<typeof DataService>;
  /**
   * The function service for `POST …/invokes/:fn`. Default: none, and invocation routes answer
   * 501 `not_implemented`.
   */
  functions?: Client<typeof OprcFunction>;
  /**
   * Id and key normalization (spec §2); keep it equal to the data service's configuration.
   * Default: strict mode, 160 bytes (`ODGM_MAX_STRING_ID_LEN`, `ODGM_STRING_ID_UNICODE`).
   */
  ids?: NormalizeOptions;
  /**
   * Largest request body in bytes; larger ones get 413. Default 4 MiB, the default maximum
   * gRPC message size, so whatever passes the gateway also fits one upstream call.
   */
  bodyLimit?: number;
  /**
   * Prometheus exposition text for `GET /metrics`. Default: none, and `/metrics` is not
   * routed (404), so a standalone gateway never pretends to have metrics.
   */
  metrics?: () => Promise<string> | string;
  /**
   * Readiness for `GET /readyz` (false → 503). Default: ask the data service for its
   * capabilities (with a 2 s deadline) and report ready when it answers.
   */
  ready?: () => Promise<boolean> | boolean;
  /**
   * Deadline of each upstream call in milliseconds (0 = none). Default 30000, so a stuck node
   * turns into a 504 instead of a hung HTTP request.
   */
  timeoutMs?: number;
  /** Generates ids for `POST …/objects`. Default: `createTidClock()` with a random clock id. */
  tidClock?: TidClock;
  /**
   * Called with every error answered with a 5xx status (the response itself never carries
   * internals). Default: none. Use it to log.
   */
  onServerError?: (error: GatewayError, request: Request) => void;
}

/** The default {@link RestGatewayOptions.bodyLimit}: 4 MiB. */
export const DEFAULT_BODY_LIMIT: number = 4 * 1024 * 1024;
/** The default {@link RestGatewayOptions.timeoutMs}: 30 s. */
export const DEFAULT_TIMEOUT_MS: number = 30_000;

const U32_MAX = 0xffff_ffff;
const VAL_TYPE_HEADER = "x-oprc-val-type";
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Renders a {@link GatewayError} as the JSON error body with its status. */
function errorResponse(err: GatewayError, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify({ error: { code: err.code, message: err.rawMessage } }), {
    status: err.status,
    headers: { "content-type": "application/json; charset=UTF-8", ...headers },
  });
}

function parseJsonBytes(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new GatewayError("bad_request", `malformed JSON body: ${detail}`, { cause });
  }
}

function parseIfMatch(header: string | undefined): bigint | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(?:W\/)?"?([0-9]{1,20})"?\s*$/.exec(header);
  const digits = m?.[1];
  if (digits === undefined || BigInt(digits) > 0xffff_ffff_ffff_ffffn) {
    throw new GatewayError(
      "bad_request",
      `If-Match must be one object version such as "3", got ${JSON.stringify(header)}`,
    );
  }
  return BigInt(digits);
}

function parseVersion(raw: unknown, where: string): bigint {
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
  if (
    typeof raw === "string" &&
    /^[0-9]{1,20}$/.test(raw) &&
    BigInt(raw) <= 0xffff_ffff_ffff_ffffn
  ) {
    return BigInt(raw);
  }
  throw new GatewayError(
    "unprocessable_entity",
    `${where} must be an unsigned 64-bit integer (number or decimal string)`,
  );
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 0;
  if (!/^[0-9]{1,10}$/.test(raw) || Number(raw) > U32_MAX) {
    throw new GatewayError(
      "bad_request",
      `limit must be an integer in 0..${U32_MAX}, got "${raw}"`,
    );
  }
  return Number(raw);
}

function parseCursor(raw: string | undefined): Uint8Array | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    return decodeBase64(raw, "cursor");
  } catch (cause) {
    throw new GatewayError("bad_request", "cursor must be the nextCursor of a previous page", {
      cause,
    });
  }
}

function cursorText(cursor: Uint8Array): string {
  return base64Encode(cursor, "url");
}

function etag(version: bigint): string {
  return `"${version}"`;
}

/**
 * Creates the REST gateway (spec §7): a Hono app that maps `/api/class/:cls/:pid/…` onto the
 * DataService contract, plus capabilities, health, readiness, metrics, a debug hash route and
 * its OpenAPI document at `/openapi.json`. The same app runs in-process inside `odgm` and
 * standalone in front of a remote node; only the transport of `options.data` differs.
 *
 * @example
 * ```ts
 * import { createClient } from "@connectrpc/connect";
 * import { createGrpcTransport } from "@connectrpc/connect-node";
 * import { DataService } from "@oprc/grpc-api";
 * import { serve } from "@hono/node-server";
 *
 * const transport = createGrpcTransport({ baseUrl: "http://127.0.0.1:8080" });
 * const app = createRestGateway({ data: createClient(DataService, transport) });
 * serve({ fetch: app.fetch, port: 8081 });
 * ```
 */
export function createRestGateway(options: RestGatewayOptions): Hono<Env> {
  const { data, functions } = options;
  const ids: NormalizeOptions = options.ids ?? {};
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBody = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const tids = options.tidClock ?? createTidClock();
  const app = new OpenAPIHono({ strict: true });

  const call = (c: Context): CallOptions => {
    const o: CallOptions = { signal: c.req.raw.signal };
    if (timeoutMs > 0) o.timeoutMs = timeoutMs;
    return o;
  };

  const bind = (
    route: RouteConfig,
    handler: (c: Context) => Promise<Response> | Response,
  ): void => {
    app.openAPIRegistry.registerPath(route);
    app.on(route.method.toUpperCase(), route.path.replace(/\{([^}]+)\}/g, ":$1"), handler);
  };

  app.onError((err, c) => {
    const e = GatewayError.from(err);
    if (e.status >= 500) options.onServerError?.(e, c.req.raw);
    return errorResponse(e);
  });
  app.notFound((c) =>
    errorResponse(new GatewayError("not_found", `no route for ${c.req.method} ${c.req.path}`)),
  );
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        errorResponse(
          new GatewayError(
            "method_not_allowed",
            `${c.req.method} is not allowed here; allowed: ${methods.join(", ")}`,
          ),
          { allow: methods.join(", ") },
        ),
    }),
  );
  app.use(
    bodyLimit({
      maxSize: maxBody,
      onError: () =>
        errorResponse(
          new GatewayError("payload_too_large", `request body exceeds ${maxBody} bytes`),
        ),
    }),
  );

  // --- request helpers -------------------------------------------------------------------

  const classOf = (c: Context) => {
    const segs = rawPathSegments(c.req.url);
    return {
      segs,
      clsId: parseNameSegment(segs[3] ?? "", "class id"),
      partitionId: parsePartitionSegment(segs[4] ?? ""),
    };
  };
  const objectOf = (c: Context) => {
    const base = classOf(c);
    const identity = parseObjectSegment(base.segs[6] ?? "", ids);
    return { ...base, identity, ref: objectRef(identity) };
  };
  const body = async (c: Context): Promise<Uint8Array> => new Uint8Array(await c.req.arrayBuffer());

  const readObjectBody = async (c: Context): Promise<ObjData> => {
    const bytes = await body(c);
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
          {
            cause,
          },
        );
      }
    }
    if (kind === "protobuf") {
      try {
        return fromBinary(ObjDataSchema, bytes);
      } catch (cause) {
        throw new GatewayError(
          "bad_request",
          `body is not a binary oprc.ObjData: ${(cause as Error).message}`,
          {
            cause,
          },
        );
      }
    }
    throw new GatewayError(
      "unsupported_media_type",
      `object bodies must be ${JSON_TYPE} or ${PROTOBUF_TYPE}; got ${c.req.header("content-type") ?? "no Content-Type"}`,
    );
  };

  const readValueBody = async (c: Context): Promise<ValData> => {
    const header = c.req.header("content-type");
    const kind = bodyKind(header);
    const bytes = await body(c);
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
    if (kind === "protobuf") {
      try {
        return fromBinary(ValDataSchema, bytes);
      } catch (cause) {
        throw new GatewayError(
          "bad_request",
          `body is not a binary oprc.ValData: ${(cause as Error).message}`,
          {
            cause,
          },
        );
      }
    }
    throw new GatewayError(
      "unsupported_media_type",
      `value bodies must be ${JSON_TYPE} ({"value": …} or {"data": "<base64>"}), ${BINARY_TYPE} or ${PROTOBUF_TYPE}; got ${header ?? "no Content-Type"}`,
    );
  };

  const sendObject = (
    c: Context,
    obj: ObjData,
    status: 200 | 201,
    headers: Record<string, string>,
  ): Response => {
    const type = negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    if (type === PROTOBUF_TYPE) {
      return new Response(toBinary(ObjDataSchema, obj), {
        status,
        headers: { "content-type": PROTOBUF_TYPE, ...headers },
      });
    }
    return c.json(toJson(ObjDataSchema, obj) as object, status, headers);
  };

  const rejectIfMatch = (c: Context): void => {
    if (c.req.header("if-match") !== undefined) {
      throw new GatewayError(
        "not_implemented",
        "If-Match is supported on value writes, value deletes and batches, not on whole-object writes",
      );
    }
  };

  // --- objects ---------------------------------------------------------------------------

  const byId = new Map(ROUTES.map((r) => [r.operationId, r]));
  const route = (id: string): RouteConfig => {
    const r = byId.get(id);
    if (r === undefined) throw new Error(`route ${id} missing`);
    return r;
  };

  bind(route("getObject"), async (c) => {
    const { clsId, partitionId, identity, ref } = objectOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const opts = call(c);
    // The version is read *before* the object: if a write lands in between, the ETag is
    // older than the data and a CAS based on it fails (safe), never the other way round.
    let version: bigint | undefined;
    for await (const env of data.listObjects(
      { clsId, partitionId, objectIdPrefix: identity.id, limit: 1 },
      opts,
    )) {
      if (env.objectId === identity.id) version = env.version;
    }
    const res = await data.get({ clsId, partitionId, ...ref }, opts);
    const headers: Record<string, string> = version === undefined ? {} : { etag: etag(version) };
    return sendObject(c, res.obj ?? create(ObjDataSchema), 200, headers);
  });

  const identityMeta = (
    clsId: string,
    partitionId: number,
    ref: { objectId: bigint; objectIdStr?: string },
  ) => create(ObjMetaSchema, { clsId, partitionId, ...ref });

  bind(route("setObject"), async (c) => {
    const { clsId, partitionId, ref } = objectOf(c);
    rejectIfMatch(c);
    const object = await readObjectBody(c);
    object.metadata = identityMeta(clsId, partitionId, ref);
    await data.set({ clsId, partitionId, ...ref, object }, call(c));
    return c.body(null, 204);
  });

  bind(route("mergeObject"), async (c) => {
    const { clsId, partitionId, ref } = objectOf(c);
    rejectIfMatch(c);
    negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const object = await readObjectBody(c);
    object.metadata = identityMeta(clsId, partitionId, ref);
    const res = await data.merge({ clsId, partitionId, ...ref, object }, call(c));
    return sendObject(c, res.obj ?? create(ObjDataSchema), 200, {});
  });

  bind(route("deleteObject"), async (c) => {
    const { clsId, partitionId, ref } = objectOf(c);
    rejectIfMatch(c);
    await data.delete({ clsId, partitionId, ...ref }, call(c));
    return c.body(null, 204);
  });

  bind(route("createObject"), async (c) => {
    const { segs, clsId, partitionId } = classOf(c);
    const type = negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const object = await readObjectBody(c);
    const id = tids.next();
    const ref = { objectId: 0n, objectIdStr: id };
    const meta = identityMeta(clsId, partitionId, ref);
    object.metadata = meta;
    await data.set({ clsId, partitionId, ...ref, object }, call(c));
    const location = `/api/class/${segs[3]}/${partitionId}/objects/${id}`;
    if (type === PROTOBUF_TYPE) {
      return new Response(toBinary(ObjMetaSchema, meta), {
        status: 201,
        headers: { "content-type": PROTOBUF_TYPE, location },
      });
    }
    return c.json(toJson(ObjMetaSchema, meta) as object, 201, { location });
  });

  bind(route("listObjects"), async (c) => {
    const { clsId, partitionId } = classOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE]);
    const prefix = c.req.query("prefix");
    const req = {
      clsId,
      partitionId,
      limit: parseLimit(c.req.query("limit")),
      ...(prefix === undefined || prefix === "" ? {} : { objectIdPrefix: prefix }),
      ...optionalCursor(parseCursor(c.req.query("cursor"))),
    };
    const objects: { objectId: string; version: string; entryCount: string }[] = [];
    let next: Uint8Array | undefined;
    for await (const env of data.listObjects(req, call(c))) {
      objects.push({
        objectId: env.objectId,
        version: String(env.version),
        entryCount: String(env.entryCount),
      });
      if (env.nextCursor !== undefined && env.nextCursor.length > 0) next = env.nextCursor;
    }
    return c.json(next === undefined ? { objects } : { objects, nextCursor: cursorText(next) });
  });

  // --- values ----------------------------------------------------------------------------

  const valueTarget = (c: Context) => {
    const base = objectOf(c);
    const key = parseKeySegment(base.segs[8] ?? "", ids);
    return { ...base, key };
  };

  bind(route("getValue"), async (c) => {
    const { clsId, partitionId, ref, key } = valueTarget(c);
    const type = negotiate(c.req.header("accept"), [JSON_TYPE, BINARY_TYPE, PROTOBUF_TYPE]);
    const res = await data.getValue({ clsId, partitionId, ...ref, ...keyRef(key) }, call(c));
    const value = res.value;
    if (value === undefined) {
      throw new GatewayError(
        "not_found",
        `entry "${key.key}" not found in object "${ref.objectIdStr ?? ref.objectId}"`,
      );
    }
    const headers: Record<string, string> =
      res.objectVersion === undefined ? {} : { etag: etag(res.objectVersion) };
    if (type === BINARY_TYPE) {
      const typeName =
        value.type === 1
          ? "VAL_TYPE_CRDT_MAP"
          : value.type === 0
            ? "VAL_TYPE_BYTE"
            : String(value.type);
      return new Response(value.data, {
        headers: { "content-type": BINARY_TYPE, [VAL_TYPE_HEADER]: typeName, ...headers },
      });
    }
    if (type === PROTOBUF_TYPE) {
      return new Response(toBinary(ValDataSchema, value), {
        headers: { "content-type": PROTOBUF_TYPE, ...headers },
      });
    }
    const json: Record<string, unknown> = { key: res.key ?? key.key, ...valueToJson(value) };
    if (res.objectVersion !== undefined) json.objectVersion = String(res.objectVersion);
    return c.json(json, 200, headers);
  });

  bind(route("setValue"), async (c) => {
    const { clsId, partitionId, ref, key } = valueTarget(c);
    const expected = parseIfMatch(c.req.header("if-match"));
    const value = await readValueBody(c);
    if (expected === undefined) {
      await data.setValue({ clsId, partitionId, ...ref, ...keyRef(key), value }, call(c));
    } else {
      await data.batchSetValues(
        {
          clsId,
          partitionId,
          ...ref,
          values: { [key.key]: value },
          expectedObjectVersion: expected,
        },
        call(c),
      );
    }
    return c.body(null, 204);
  });

  bind(route("deleteValue"), async (c) => {
    const { clsId, partitionId, ref, key } = valueTarget(c);
    const expected = parseIfMatch(c.req.header("if-match"));
    if (expected === undefined) {
      await data.deleteValue({ clsId, partitionId, ...ref, ...keyRef(key) }, call(c));
    } else {
      await data.batchSetValues(
        { clsId, partitionId, ...ref, deleteKeys: [key.key], expectedObjectVersion: expected },
        call(c),
      );
    }
    return c.body(null, 204);
  });

  bind(route("listValues"), async (c) => {
    const { clsId, partitionId, ref } = objectOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE]);
    const prefix = c.req.query("prefix");
    const req = {
      clsId,
      partitionId,
      ...ref,
      limit: parseLimit(c.req.query("limit")),
      ...(prefix === undefined || prefix === "" ? {} : { keyPrefix: prefix }),
      ...optionalCursor(parseCursor(c.req.query("cursor"))),
    };
    const values: Record<string, unknown>[] = [];
    let next: Uint8Array | undefined;
    for await (const env of data.listValues(req, call(c))) {
      const item: Record<string, unknown> = { key: env.key, version: String(env.version) };
      if (env.value !== undefined) Object.assign(item, valueToJson(env.value));
      values.push(item);
      if (env.nextCursor !== undefined && env.nextCursor.length > 0) next = env.nextCursor;
    }
    return c.json(next === undefined ? { values } : { values, nextCursor: cursorText(next) });
  });

  bind(route("batchSetValues"), async (c) => {
    const { clsId, partitionId, ref } = objectOf(c);
    const ifMatch = parseIfMatch(c.req.header("if-match"));
    const header = c.req.header("content-type");
    const kind = bodyKind(header);
    const bytes = await body(c);
    let values: Record<string, ValData> = {};
    let deleteKeys: string[] = [];
    let expected: bigint | undefined;
    if (kind === "json") {
      ({ values, deleteKeys, expected } = parseBatchJson(parseJsonBytes(bytes)));
    } else if (kind === "protobuf") {
      try {
        const msg = fromBinary(BatchSetValuesRequestSchema, bytes);
        values = msg.values;
        deleteKeys = msg.deleteKeys;
        expected = msg.expectedObjectVersion;
      } catch (cause) {
        throw new GatewayError(
          "bad_request",
          `body is not a binary oprc.BatchSetValuesRequest: ${(cause as Error).message}`,
          {
            cause,
          },
        );
      }
    } else {
      throw new GatewayError(
        "unsupported_media_type",
        `batch bodies must be ${JSON_TYPE} or ${PROTOBUF_TYPE}; got ${header ?? "no Content-Type"}`,
      );
    }
    if (ifMatch !== undefined && expected !== undefined && ifMatch !== expected) {
      throw new GatewayError(
        "bad_request",
        `If-Match (${ifMatch}) and expected_object_version (${expected}) disagree`,
      );
    }
    expected ??= ifMatch;
    await data.batchSetValues(
      {
        clsId,
        partitionId,
        ...ref,
        values,
        deleteKeys,
        ...(expected === undefined ? {} : { expectedObjectVersion: expected }),
      },
      call(c),
    );
    return c.body(null, 204);
  });

  // --- invocations -----------------------------------------------------------------------

  const invocationOptions = (c: Context): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [k, v] of new URL(c.req.url).searchParams) out[k] = v;
    return out;
  };

  const sendInvocation = (res: InvocationResponse): Response => {
    const statusName = ResponseStatus[res.status] ?? String(res.status);
    const status =
      res.status === ResponseStatus.OKAY
        ? 200
        : res.status === ResponseStatus.INVALID_REQUEST
          ? 400
          : res.status === ResponseStatus.APP_ERROR
            ? 500
            : 502;
    const headers: Record<string, string> = { "x-invocation-status": statusName };
    if (res.invocationId !== "") headers["x-invocation-id"] = res.invocationId;
    if (status !== 200 && (res.payload === undefined || res.payload.length === 0)) {
      const code = status === 400 ? "bad_request" : status === 500 ? "internal" : "bad_gateway";
      return errorResponse(new GatewayError(code, `the function answered ${statusName}`), headers);
    }
    let contentType = BINARY_TYPE;
    for (const [k, v] of Object.entries(res.headers))
      if (k.toLowerCase() === "content-type") contentType = v;
    headers["content-type"] = contentType;
    return new Response(res.payload ?? new Uint8Array(0), { status, headers });
  };

  const needFunctions = (): Client<typeof OprcFunction> => {
    if (functions === undefined) {
      throw new GatewayError("not_implemented", "invocations are not enabled on this gateway");
    }
    return functions;
  };

  bind(route("invokeFunction"), async (c) => {
    const { segs, clsId, partitionId } = classOf(c);
    const fnId = parseNameSegment(segs[6] ?? "", "function id");
    const fns = needFunctions();
    const payload = await body(c);
    const res = await fns.invokeFn(
      { clsId, partitionId, fnId, options: invocationOptions(c), payload },
      call(c),
    );
    return sendInvocation(res);
  });

  bind(route("invokeObjectFunction"), async (c) => {
    const { segs, clsId, partitionId, ref } = objectOf(c);
    const fnId = parseNameSegment(segs[8] ?? "", "function id");
    const fns = needFunctions();
    const payload = await body(c);
    const res = await fns.invokeObj(
      { clsId, partitionId, ...ref, fnId, options: invocationOptions(c), payload },
      call(c),
    );
    return sendInvocation(res);
  });

  // --- service routes --------------------------------------------------------------------

  bind(route("capabilities"), async (c) => {
    const res = await data.capabilities({}, call(c));
    return c.json(toJson(CapabilitiesResponseSchema, res, { alwaysEmitImplicit: true }) as object);
  });

  bind(route("healthz"), (c) => c.json({ status: "ok" }));

  const ready =
    options.ready ??
    (async () => {
      try {
        await data.capabilities({}, { timeoutMs: 2000 });
        return true;
      } catch {
        return false;
      }
    });
  bind(route("readyz"), async (c) => {
    if (await ready()) return c.json({ status: "ready" });
    return errorResponse(new GatewayError("unavailable", "not ready"));
  });

  bind(route("debugObjectHash"), (c) => {
    const segs = rawPathSegments(c.req.url);
    const clsId = parseNameSegment(segs[3] ?? "", "class id");
    const partitionId = parsePartitionSegment(segs[4] ?? "");
    const identity = parseObjectSegment(segs[5] ?? "", ids);
    const hash = hashId(identity.id);
    const out: Record<string, unknown> = {
      clsId,
      partitionId,
      objectId: identity.id,
      kind: identity.kind,
      hash: hash.toString(),
      hashHex: `0x${hash.toString(16).padStart(16, "0")}`,
    };
    const n = c.req.query("partitions");
    if (n !== undefined) {
      if (!/^[0-9]{1,10}$/.test(n) || Number(n) < 1 || Number(n) > U32_MAX) {
        throw new GatewayError(
          "bad_request",
          `partitions must be an integer in 1..${U32_MAX}, got "${n}"`,
        );
      }
      out.partitions = Number(n);
      out.partition = partitionOf(identity.id, Number(n));
    }
    return c.json(out);
  });

  const metrics = options.metrics;
  if (metrics !== undefined) {
    bind(METRICS_ROUTE, async (c) => {
      const text = await metrics();
      return c.body(text, 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    });
  }

  const document = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "ODGM REST gateway",
      version: "1",
      description: "The REST surface of ODGM (spec §7), mapped onto the DataService contract.",
    },
  });
  app.get("/openapi.json", (c) => c.json(document));

  return app;
}

function optionalCursor(cursor: Uint8Array | undefined): { cursor?: Uint8Array } {
  return cursor === undefined ? {} : { cursor };
}

function parseBatchJson(json: unknown): {
  values: Record<string, ValData>;
  deleteKeys: string[];
  expected: bigint | undefined;
} {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new GatewayError("unprocessable_entity", "batch body must be a JSON object");
  }
  const o = json as Record<string, unknown>;
  const values: Record<string, ValData> = {};
  let deleteKeys: string[] = [];
  let expected: bigint | undefined;
  for (const [field, raw] of Object.entries(o)) {
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

import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";

// The OpenAPI description of every route. `createRestGateway` registers each of these in the
// document *and* binds its handler to the same method and path, so the two cannot drift.

const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "not_found" }),
      message: z.string().openapi({ example: 'object "ord-1" not found' }),
    }),
  })
  .openapi("Error");

const errorContent = { "application/json": { schema: ErrorBody } };

function errors(
  ...statuses: number[]
): Record<string, { description: string; content: typeof errorContent }> {
  const text: Record<number, string> = {
    400: "Bad request: an invalid id, key, partition or query parameter, malformed JSON or protobuf",
    404: "Not found",
    405: "Method not allowed",
    406: "None of the accepted media types can be produced",
    409: "Compare-and-swap conflict (expected version differs)",
    413: "Body larger than the gateway's limit, or object too large to return",
    415: "Unsupported or missing Content-Type",
    422: "Well-formed JSON that does not have the expected shape",
    500: "Internal error",
    501: "Feature disabled on the data service, or no function client configured",
    502: "The invoked function's system failed",
    503: "The data service is unavailable or not ready",
  };
  const out: Record<string, { description: string; content: typeof errorContent }> = {};
  for (const status of [...statuses, 500, 503]) {
    out[String(status)] = { description: text[status] ?? "Error", content: errorContent };
  }
  return out;
}

const ClassParams = z.object({
  cls: z.string().min(1).openapi({ description: "Class (collection) id", example: "order" }),
  pid: z
    .string()
    .regex(/^[0-9]+$/)
    .openapi({ description: "Partition id, 0..2^31-1", example: "0" }),
});
const ObjectParams = ClassParams.extend({
  oid: z.string().min(1).openapi({
    description:
      "Object id: digits fitting u64 are numeric (042 = 42), anything else is a normalized string id",
    example: "ord_2025_09_12345",
  }),
});
const ValueParams = ObjectParams.extend({
  key: z.string().min(1).openapi({
    description:
      "Entry key: digits fitting u32 are numeric, anything else is a normalized string key",
    example: "status",
  }),
});
const PageQuery = z.object({
  prefix: z.string().optional().openapi({ description: "Only ids (keys) starting with this" }),
  limit: z
    .string()
    .regex(/^[0-9]+$/)
    .optional()
    .openapi({ description: "Page size; 0 = default (100), capped at 1024" }),
  cursor: z
    .string()
    .optional()
    .openapi({ description: "`nextCursor` of the previous page (base64url)" }),
});
const IfMatch = z.object({
  "if-match": z
    .string()
    .optional()
    .openapi({ description: 'Expected object version, e.g. "3"', example: '"3"' }),
});

const ObjData = z.record(z.string(), z.unknown()).openapi("ObjData", {
  description: "proto3 canonical JSON of oprc.ObjData (metadata, entries, entriesStr, event)",
});
const ObjMeta = z
  .record(z.string(), z.unknown())
  .openapi("ObjMeta", { description: "proto3 canonical JSON of oprc.ObjMeta" });
const ValueIn = z
  .object({
    value: z
      .unknown()
      .optional()
      .openapi({ description: "Any JSON; stored as its UTF-8 JSON text (VAL_TYPE_BYTE)" }),
    data: z.string().optional().openapi({ description: "base64 bytes (alternative to value)" }),
    type: z.enum(["VAL_TYPE_BYTE", "VAL_TYPE_CRDT_MAP"]).optional(),
  })
  .openapi("ValueInput");
const ValueOut = z
  .object({
    key: z.string(),
    type: z.enum(["VAL_TYPE_BYTE", "VAL_TYPE_CRDT_MAP"]),
    data: z.string().openapi({ description: "The stored bytes, base64" }),
    value: z
      .unknown()
      .optional()
      .openapi({ description: "Present when the bytes are UTF-8 JSON text" }),
    objectVersion: z.string().optional(),
  })
  .openapi("Value");
const ObjectList = z
  .object({
    objects: z.array(
      z.object({ objectId: z.string(), version: z.string(), entryCount: z.string() }),
    ),
    nextCursor: z.string().optional(),
  })
  .openapi("ObjectList");
const ValueList = z
  .object({
    values: z.array(
      z.object({
        key: z.string(),
        version: z.string(),
        type: z.string().optional(),
        data: z.string().optional(),
        value: z.unknown().optional(),
      }),
    ),
    nextCursor: z.string().optional(),
  })
  .openapi("ValueList");
const Batch = z
  .object({
    values: z.record(z.string(), ValueIn).optional(),
    delete_keys: z.array(z.string()).optional(),
    expected_object_version: z.union([z.string(), z.number()]).optional(),
  })
  .openapi("BatchSetValues");

const binary = { schema: z.string().openapi({ format: "binary" }) };
const objectBody = {
  content: { "application/json": { schema: ObjData }, "application/x-protobuf": binary },
  required: false,
};
const objectOut = {
  "application/json": { schema: ObjData },
  "application/x-protobuf": binary,
};
const noContent = { description: "Done" };

/** Every route of the gateway, in registration order. */
export const ROUTES: readonly RouteConfig[] = [
  createRoute({
    operationId: "getObject",
    method: "get",
    path: "/api/class/{cls}/{pid}/objects/{oid}",
    summary: "Get a whole object",
    request: { params: ObjectParams },
    responses: {
      200: { description: "The object; ETag = object version", content: objectOut },
      ...errors(400, 404, 406, 413),
    },
  }),
  createRoute({
    operationId: "setObject",
    method: "put",
    path: "/api/class/{cls}/{pid}/objects/{oid}",
    summary:
      "Create or replace an object (entries not listed are removed); an empty body makes an empty object",
    request: { params: ObjectParams, body: objectBody },
    responses: { 204: noContent, ...errors(400, 413, 415, 422, 501) },
  }),
  createRoute({
    operationId: "mergeObject",
    method: "patch",
    path: "/api/class/{cls}/{pid}/objects/{oid}",
    summary: "Merge entries into an object and return the merged object",
    request: { params: ObjectParams, body: objectBody },
    responses: {
      200: { description: "The merged object", content: objectOut },
      ...errors(400, 406, 413, 415, 422, 501),
    },
  }),
  createRoute({
    operationId: "deleteObject",
    method: "delete",
    path: "/api/class/{cls}/{pid}/objects/{oid}",
    summary: "Delete an object (idempotent)",
    request: { params: ObjectParams },
    responses: { 204: noContent, ...errors(400) },
  }),
  createRoute({
    operationId: "createObject",
    method: "post",
    path: "/api/class/{cls}/{pid}/objects",
    summary: "Create an object with a server-generated TID id",
    request: { params: ClassParams, body: objectBody },
    responses: {
      201: {
        description: "Created; Location names the new object",
        headers: z.object({ location: z.string() }),
        content: { "application/json": { schema: ObjMeta }, "application/x-protobuf": binary },
      },
      ...errors(400, 406, 413, 415, 422, 501),
    },
  }),
  createRoute({
    operationId: "listObjects",
    method: "get",
    path: "/api/class/{cls}/{pid}/objects",
    summary: "List live objects of a partition, ordered by id",
    request: { params: ClassParams, query: PageQuery },
    responses: {
      200: { description: "One page", content: { "application/json": { schema: ObjectList } } },
      ...errors(400, 404, 406),
    },
  }),
  createRoute({
    operationId: "getValue",
    method: "get",
    path: "/api/class/{cls}/{pid}/objects/{oid}/values/{key}",
    summary: "Get one entry",
    request: { params: ValueParams },
    responses: {
      200: {
        description: "The entry; ETag = object version",
        content: {
          "application/json": { schema: ValueOut },
          "application/octet-stream": binary,
          "application/x-protobuf": binary,
        },
      },
      ...errors(400, 404, 406),
    },
  }),
  createRoute({
    operationId: "setValue",
    method: "put",
    path: "/api/class/{cls}/{pid}/objects/{oid}/values/{key}",
    summary: "Set one entry (If-Match makes it compare-and-swap)",
    request: {
      params: ValueParams,
      headers: IfMatch,
      body: {
        content: {
          "application/json": { schema: ValueIn },
          "application/octet-stream": binary,
          "application/x-protobuf": binary,
        },
        required: true,
      },
    },
    responses: { 204: noContent, ...errors(400, 409, 413, 415, 422, 501) },
  }),
  createRoute({
    operationId: "deleteValue",
    method: "delete",
    path: "/api/class/{cls}/{pid}/objects/{oid}/values/{key}",
    summary: "Delete one entry (idempotent; If-Match makes it compare-and-swap)",
    request: { params: ValueParams, headers: IfMatch },
    responses: { 204: noContent, ...errors(400, 409, 501) },
  }),
  createRoute({
    operationId: "listValues",
    method: "get",
    path: "/api/class/{cls}/{pid}/objects/{oid}/values",
    summary: "List an object's entries in storage order",
    request: { params: ObjectParams, query: PageQuery },
    responses: {
      200: { description: "One page", content: { "application/json": { schema: ValueList } } },
      ...errors(400, 404, 406),
    },
  }),
  createRoute({
    operationId: "batchSetValues",
    method: "post",
    path: "/api/class/{cls}/{pid}/objects/{oid}/values/batch",
    summary: "Set and delete entries atomically, optionally compare-and-swap",
    request: {
      params: ObjectParams,
      headers: IfMatch,
      body: {
        content: { "application/json": { schema: Batch }, "application/x-protobuf": binary },
        required: true,
      },
    },
    responses: { 204: noContent, ...errors(400, 409, 413, 415, 422, 501) },
  }),
  createRoute({
    operationId: "invokeFunction",
    method: "post",
    path: "/api/class/{cls}/{pid}/invokes/{fn}",
    summary: "Invoke a stateless function; query parameters become invocation options",
    request: {
      params: ClassParams.extend({ fn: z.string().min(1) }),
      body: { content: { "application/octet-stream": binary }, required: false },
    },
    responses: {
      200: {
        description: "OKAY: the function's payload",
        content: { "application/octet-stream": binary },
      },
      ...errors(400, 413, 501, 502),
    },
  }),
  createRoute({
    operationId: "invokeObjectFunction",
    method: "post",
    path: "/api/class/{cls}/{pid}/objects/{oid}/invokes/{fn}",
    summary: "Invoke a function on an object; query parameters become invocation options",
    request: {
      params: ObjectParams.extend({ fn: z.string().min(1) }),
      body: { content: { "application/octet-stream": binary }, required: false },
    },
    responses: {
      200: {
        description: "OKAY: the function's payload",
        content: { "application/octet-stream": binary },
      },
      ...errors(400, 413, 501, 502),
    },
  }),
  createRoute({
    operationId: "capabilities",
    method: "get",
    path: "/api/capabilities",
    summary: "What the data service has enabled",
    responses: {
      200: {
        description: "proto3 JSON of oprc.CapabilitiesResponse",
        content: { "application/json": { schema: z.record(z.string(), z.boolean()) } },
      },
      ...errors(),
    },
  }),
  createRoute({
    operationId: "healthz",
    method: "get",
    path: "/healthz",
    summary: "Liveness: the gateway process answers",
    responses: {
      200: {
        description: "Alive",
        content: { "application/json": { schema: z.object({ status: z.string() }) } },
      },
    },
  }),
  createRoute({
    operationId: "readyz",
    method: "get",
    path: "/readyz",
    summary: "Readiness: 503 until the service (or the upstream node) is ready",
    responses: {
      200: {
        description: "Ready",
        content: { "application/json": { schema: z.object({ status: z.string() }) } },
      },
      ...errors(),
    },
  }),
  createRoute({
    operationId: "debugObjectHash",
    method: "get",
    path: "/debug/object-hash/{cls}/{pid}/{id}",
    summary:
      "Normalized id, its xxHash64 and its hash partition (over ?partitions=N, else the collection's partition count when the server knows it)",
    request: {
      params: ClassParams.extend({ id: z.string().min(1) }),
      query: z.object({
        partitions: z
          .string()
          .regex(/^[0-9]+$/)
          .optional(),
      }),
    },
    responses: {
      200: {
        description: "Hash information",
        content: {
          "application/json": {
            schema: z.object({
              clsId: z.string(),
              partitionId: z.number(),
              objectId: z.string(),
              kind: z.enum(["numeric", "string"]),
              hash: z.string(),
              hashHex: z.string(),
              partitions: z.number().optional(),
              partition: z.number().optional(),
            }),
          },
        },
      },
      ...errors(400),
    },
  }),
];

/** The `/metrics` route, present only when a metrics provider is configured. */
export const METRICS_ROUTE: RouteConfig = createRoute({
  operationId: "metrics",
  method: "get",
  path: "/metrics",
  summary: "Prometheus metrics",
  responses: {
    200: {
      description: "Prometheus text format",
      content: { "text/plain": { schema: z.string() } },
    },
  },
});

/** The OpenAPI document itself. */
export const OPENAPI_ROUTE: RouteConfig = createRoute({
  operationId: "openapi",
  method: "get",
  path: "/openapi.json",
  summary: "This OpenAPI 3.1 document (every route the server answers)",
  responses: {
    200: {
      description: "OpenAPI 3.1 JSON",
      content: { "application/json": { schema: z.object({}).passthrough() } },
    },
  },
});

/** A route a host adds to the gateway's app (see {@link documentRoute}). */
export interface HostRoute {
  readonly method: "get" | "post" | "put" | "delete";
  /** Hono path syntax (`/api/cluster/:id`). */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  /** The success status and its description. */
  readonly success: { readonly status: number; readonly description: string };
  /** The request has a JSON body. */
  readonly jsonBody?: boolean;
  /** Error statuses it answers, besides 500 and 503. */
  readonly errors?: readonly number[];
}

/** The OpenAPI description of a {@link HostRoute}: JSON in and out, the gateway's error body. */
export function hostRouteConfig(r: HostRoute): RouteConfig {
  return createRoute({
    operationId: r.operationId,
    method: r.method,
    path: r.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}"),
    summary: r.summary,
    ...(r.jsonBody === true
      ? {
          request: {
            body: { content: { "application/json": { schema: z.object({}).passthrough() } } },
          },
        }
      : {}),
    responses: {
      [r.success.status]: {
        description: r.success.description,
        content: { "application/json": { schema: z.object({}).passthrough() } },
      },
      ...errors(...(r.errors ?? [])),
    },
  });
}

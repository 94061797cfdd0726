// Collection administration over REST (`/api/collections`) and gRPC
// (`oprc.CollectionService`), with one mapping of refusals to statuses.
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type CollectionService,
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  CreateCollectionResponseSchema,
  ListCollectionsResponseSchema,
} from "@oprc/grpc-api";
import { documentRoute, type HostRoute } from "@oprc/rest-gateway";
import type { Hono } from "hono";
import { isOdgmError, type OdgmError } from "../odgm-error.js";

/** What the routes need: the registry's list and the (cluster-wide) creation. */
export interface CollectionAdmin {
  list(): CreateCollectionRequest[];
  create(spec: CreateCollectionRequest): Promise<CreateCollectionRequest>;
}

/** gRPC code and REST status/code of a refused collection spec. */
function collectionStatus(err: OdgmError): {
  code: Code;
  http: 400 | 409 | 501 | 507;
  rest: string;
} {
  if (err.code === "collection_exists")
    return { code: Code.AlreadyExists, http: 409, rest: "conflict" };
  if (err.code === "too_many_partitions")
    return { code: Code.ResourceExhausted, http: 507, rest: "insufficient_storage" };
  if (err.code === "unsupported")
    return { code: Code.Unimplemented, http: 501, rest: "unimplemented" };
  return { code: Code.InvalidArgument, http: 400, rest: "invalid_argument" };
}

/** `oprc.CollectionService`. */
export function createCollectionServiceImpl(
  admin: CollectionAdmin,
): ServiceImpl<typeof CollectionService> {
  return {
    async createCollection(req) {
      try {
        const spec = await admin.create(req);
        return create(CreateCollectionResponseSchema, { name: spec.name });
      } catch (err) {
        if (!isOdgmError(err)) throw err;
        throw new ConnectError(err.message, collectionStatus(err).code, undefined, undefined, err);
      }
    },
    listCollections: () => create(ListCollectionsResponseSchema, { collections: admin.list() }),
  };
}

const CREATE_ROUTE: HostRoute = {
  method: "post",
  path: "/api/collections",
  operationId: "createCollection",
  summary:
    "Creates a collection (proto3 JSON of CreateCollectionRequest); an equal spec is a no-op",
  jsonBody: true,
  success: { status: 201, description: "The collection as stored (normalized)" },
  errors: [400, 409, 501, 507],
};

/**
 * `GET /api/collections` and `POST /api/collections`, on the gateway app itself, so unknown
 * routes keep the gateway's JSON 404 and its error format.
 */
export function registerCollectionRoutes(app: Hono, admin: CollectionAdmin): void {
  documentRoute(
    app,
    {
      method: "get",
      path: "/api/collections",
      operationId: "listCollections",
      summary: "Every collection (proto3 JSON of ListCollectionsResponse)",
      success: { status: 200, description: "The collections" },
    },
    (c) =>
      c.json(
        toJson(
          ListCollectionsResponseSchema,
          create(ListCollectionsResponseSchema, { collections: admin.list() }),
        ),
      ),
  );
  documentRoute(app, CREATE_ROUTE, async (c) => {
    let spec: CreateCollectionRequest;
    try {
      spec = fromJson(CreateCollectionRequestSchema, (await c.req.json()) as JsonValue);
    } catch (err) {
      return c.json({ error: { code: "invalid_argument", message: (err as Error).message } }, 400);
    }
    try {
      const created = await admin.create(spec);
      return c.json(toJson(CreateCollectionRequestSchema, created), 201);
    } catch (err) {
      if (isOdgmError(err)) {
        const status = collectionStatus(err);
        return c.json({ error: { code: status.rest, message: err.message } }, status.http);
      }
      throw err;
    }
  });
}

import { type Client, ConnectError } from "@connectrpc/connect";
import { OpenAPIHono } from "@hono/zod-openapi";
import {
  type DataService,
  LEADER_HINT_HEADER,
  type OprcFunction,
  type WatchService,
} from "@oprc/grpc-api";
import { createTidClock, type NormalizeOptions, type TidClock } from "@oprc/oprc-id";
import type { Env, Handler, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { methodNotAllowed } from "hono/method-not-allowed";
import { errorResponse, GatewayError } from "./gateway-error.js";
import { type HostRoute, hostRouteConfig, OPENAPI_ROUTE } from "./openapi-routes.js";
import { bindChangeRoutes } from "./routes/change-routes.js";
import { bindInvocationRoutes } from "./routes/invocation-routes.js";
import { bindObjectRoutes } from "./routes/object-routes.js";
import { createRouteContext } from "./routes/route-context.js";
import { bindServiceRoutes } from "./routes/service-routes.js";
import { bindValueRoutes } from "./routes/value-routes.js";

/**
 * Headers of a 503: `Retry-After`, and the upstream's `odgm-leader-hint` (the address of the
 * partition's leader, when the node could not forward to it) so a client can go there.
 */
function retryHeaders(e: GatewayError): Record<string, string> | undefined {
  if (e.code !== "unavailable") return undefined;
  const hint = e.cause instanceof ConnectError ? e.cause.metadata.get(LEADER_HINT_HEADER) : null;
  return { "retry-after": "1", ...(hint === null ? {} : { [LEADER_HINT_HEADER]: hint }) };
}

/** Options of {@link createRestGateway}. */
export interface RestGatewayOptions {
  /**
   * The data service, as a Connect client: inside `odgm` one that calls the node's handlers
   * directly; `createRouterTransport` in process; `createGrpcTransport` /
   * `createConnectTransport` in front of a remote node. Required.
   */
  data: Client<typeof DataService>;
  /**
   * The function service for `POST …/invokes/:fn`. Default: none, and invocation routes answer
   * 501 `not_implemented`.
   */
  functions?: Client<typeof OprcFunction>;
  /**
   * The node's change feed (`oprc.WatchService`) for `GET /api/class/:cls/:pid/changes`
   * (Server-Sent Events). Default: none, and the route is not served.
   */
  watch?: Client<typeof WatchService>;
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
   * Extra fields of the `GET /readyz` answer (e.g. `{ zenoh: "down" }`): added to the JSON
   * body when ready and to the message when not. They never change readiness itself.
   */
  readyDetail?: () => Record<string, string>;
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
  /**
   * A collection's partition count, when the host knows it: `/debug/object-hash` then
   * reports the object's partition without `?partitions=`. Default: none.
   */
  partitionCount?: (cls: string) => number | undefined;
}

/** The default {@link RestGatewayOptions.bodyLimit}: 4 MiB. */
export const DEFAULT_BODY_LIMIT: number = 4 * 1024 * 1024;
/** The default {@link RestGatewayOptions.timeoutMs}: 30 s. */
export const DEFAULT_TIMEOUT_MS: number = 30_000;

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
  const maxBody = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = new OpenAPIHono({ strict: true });

  app.onError((err, c) => {
    // Whatever failed after the client went away failed because it went away: not a
    // server error (and nobody reads the answer).
    const e = c.req.raw.signal.aborted
      ? new GatewayError("client_closed_request", "the client closed the request", { cause: err })
      : GatewayError.from(err);
    if (e.status >= 500) options.onServerError?.(e, c.req.raw);
    return errorResponse(e, retryHeaders(e));
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

  const ctx = createRouteContext(
    app,
    {
      data: options.data,
      functions: options.functions,
      ids: options.ids ?? {},
      tids: options.tidClock ?? createTidClock(),
    },
    options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  );
  bindObjectRoutes(ctx);
  bindValueRoutes(ctx);
  bindInvocationRoutes(ctx);
  if (options.watch !== undefined) bindChangeRoutes(app, options.watch);
  bindServiceRoutes(ctx, {
    ready: options.ready,
    readyDetail: options.readyDetail,
    metrics: options.metrics,
    partitionCount: options.partitionCount,
  });

  // Built per request, so routes a host documents after creating the gateway
  // ({@link documentRoute}) are in it.
  app.openAPIRegistry.registerPath(OPENAPI_ROUTE);
  app.get(OPENAPI_ROUTE.path, (c) =>
    c.json(
      app.getOpenAPI31Document({
        openapi: "3.1.0",
        info: {
          title: "ODGM REST gateway",
          version: "1",
          description: "The REST surface of ODGM (spec §7), mapped onto the DataService contract.",
        },
      }),
    ),
  );

  return app;
}

/**
 * Serves `handler` on the gateway's `app` and describes the route in its OpenAPI document
 * (JSON in and out, the gateway's error body), for routes a host adds beside the
 * gateway's own.
 *
 * @example
 * ```ts
 * documentRoute(app, { method: "get", path: "/api/collections", operationId: "listCollections",
 *   summary: "Every collection", success: { status: 200, description: "The collections" } },
 *   (c) => c.json({ collections: [] }));
 * ```
 */
export function documentRoute(app: Hono, route: HostRoute, handler: Handler): void {
  (app as OpenAPIHono).openAPIRegistry.registerPath(hostRouteConfig(route));
  app.on(route.method.toUpperCase(), route.path, handler);
}

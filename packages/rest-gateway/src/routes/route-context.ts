import type { CallOptions, Client } from "@connectrpc/connect";
import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import {
  type DataService,
  type OprcFunction,
  READ_CONSISTENCY_HEADER,
  WARNING_HEADER,
} from "@oprc/grpc-api";
import type { EntryKey, NormalizeOptions, ObjectIdentity, TidClock } from "@oprc/oprc-id";
import type { Context } from "hono";
import { ROUTES } from "../openapi-routes.js";
import {
  objectRef,
  parseKeySegment,
  parseNameSegment,
  parseObjectSegment,
  parsePartitionSegment,
  rawPathSegments,
} from "../path-segments.js";

/** Request headers every upstream call carries on. */
const PASSED_ON = ["authorization", "traceparent", "tracestate", READ_CONSISTENCY_HEADER] as const;

/** The request headers an upstream call carries on (see {@link RouteContext.call}). */
export function passedOnHeaders(c: Context): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_ON) {
    const v = c.req.header(name);
    if (v !== undefined) headers[name] = v;
  }
  return headers;
}

/** A route handler. */
export type Handler = (c: Context) => Promise<Response> | Response;

/** What every group of routes is built from: the upstream clients and the path parsers. */
export interface RouteContext {
  readonly data: Client<typeof DataService>;
  readonly functions: Client<typeof OprcFunction> | undefined;
  readonly ids: NormalizeOptions;
  readonly tids: TidClock;
  /** Registers `handler` for the route with this operation id (or this route) and documents it. */
  bind(route: string | RouteConfig, handler: Handler): void;
  /**
   * The options of one upstream call: the request's abort signal, the deadline and the
   * request's `Authorization` header (so a node with authentication on checks the caller)
   * and W3C trace context (`traceparent`, `tracestate`: the call joins the caller's trace).
   */
  call(c: Context): CallOptions;
  /** `/api/class/:cls/:pid/…` */
  classOf(c: Context): ClassTarget;
  /** `/api/class/:cls/:pid/objects/:oid/…` */
  objectOf(c: Context): ObjectTarget;
  /** `/api/class/:cls/:pid/objects/:oid/values/:key` */
  valueOf(c: Context): ValueTarget;
}

export interface ClassTarget {
  /** The raw path segments, still percent-encoded. */
  segs: string[];
  clsId: string;
  partitionId: number;
}
export interface ObjectTarget extends ClassTarget {
  identity: ObjectIdentity;
  ref: { objectId: bigint; objectIdStr?: string };
}
export interface ValueTarget extends ObjectTarget {
  key: EntryKey;
}

export function createRouteContext(
  app: OpenAPIHono,
  upstream: Pick<RouteContext, "data" | "functions" | "ids" | "tids">,
  timeoutMs: number,
): RouteContext {
  const { ids } = upstream;
  const byId = new Map(ROUTES.map((r) => [r.operationId, r]));
  const classOf = (c: Context): ClassTarget => {
    const segs = rawPathSegments(c.req.url);
    return {
      segs,
      clsId: parseNameSegment(segs[3] ?? "", "class id"),
      partitionId: parsePartitionSegment(segs[4] ?? ""),
    };
  };
  const objectOf = (c: Context): ObjectTarget => {
    const base = classOf(c);
    const identity = parseObjectSegment(base.segs[6] ?? "", ids);
    return { ...base, identity, ref: objectRef(identity) };
  };
  return {
    ...upstream,
    bind(route, handler) {
      const config = typeof route === "string" ? byId.get(route) : route;
      if (config === undefined) throw new Error(`route ${String(route)} is not in ROUTES`);
      app.openAPIRegistry.registerPath(config);
      app.on(config.method.toUpperCase(), config.path.replace(/\{([^}]+)\}/g, ":$1"), handler);
    },
    call(c) {
      const o: CallOptions = {
        signal: c.req.raw.signal,
        // A warning of the node (e.g. a deprecated way of writing) reaches the HTTP client.
        onHeader: (h) => {
          const warning = h.get(WARNING_HEADER);
          if (warning !== null) c.header(WARNING_HEADER, warning);
        },
      };
      if (timeoutMs > 0) o.timeoutMs = timeoutMs;
      const headers = passedOnHeaders(c);
      if (Object.keys(headers).length > 0) o.headers = headers;
      return o;
    },
    classOf,
    objectOf,
    valueOf(c) {
      const base = objectOf(c);
      return { ...base, key: parseKeySegment(base.segs[8] ?? "", ids) };
    },
  };
}

// The one server pipeline: every service implementation is built once, and the three ways
// a call arrives — connect-node (gRPC, gRPC-Web, Connect), the gRPC unary fast path, and
// the in-process transport the REST gateway uses — run the same implementations under the
// same interceptors. An interceptor added here (metrics, tracing, authentication) cannot
// be skipped by any path.
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  createRouterTransport,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

/** A Node request handler (connect-node's `NodeHandlerFn`, which it does not export). */
type NodeHandlerFn = NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>;

import {
  createDataServiceImpl,
  createOprcFunctionImpl,
  type DataPlane,
  DataService,
  type GrpcApiOptions,
  Health,
  type HealthService,
  OprcFunction,
} from "@oprc/grpc-api";
import { dropUnrepresentableDeadline } from "./deadline-headers.js";
import type { DualRequestHandler } from "./dual-protocol-server.js";
import { createGrpcUnaryFastPath } from "./grpc-unary-fast-path.js";

/** A service the node serves besides DataService, OprcFunction and Health. */
export interface ServedService {
  readonly service: DescService;
  readonly impl: object;
}

/** Options of {@link createServerPipeline}. */
export interface ServerPipelineOptions {
  readonly plane: DataPlane;
  readonly api: GrpcApiOptions;
  readonly health: HealthService;
  /** CollectionService, MaintenanceService, RaftService… */
  readonly services: readonly ServedService[];
  /** Applied, in order (first outermost), on every path. */
  readonly interceptors: readonly Interceptor[];
  /** Request and response size limit. */
  readonly maxMessageBytes: number;
  /** Serve plain gRPC unary calls of DataService and OprcFunction on the fast path. */
  readonly fastPath: boolean;
  /**
   * Client-side interceptors of the in-process transport (the node marks its own calls,
   * already authorized at the REST or Zenoh edge, as trusted). Default: none.
   */
  readonly inProcessInterceptors?: readonly Interceptor[];
}

/** What a node serves, built once. */
export interface ServerPipeline {
  /** Registers every service on a Connect router. */
  readonly routes: (router: ConnectRouter) => void;
  /** Every service {@link routes} registers. */
  readonly services: readonly DescService[];
  /**
   * An in-process transport to the same services for the REST gateway, whose calls carry
   * the `inProcessInterceptors` (the node's trust mark).
   */
  readonly transport: Transport;
  /**
   * An in-process transport without `inProcessInterceptors`, for an edge whose calls carry
   * their own credentials (Zenoh: a token in the attachment) and are checked like a
   * network call's.
   */
  readonly edgeTransport: Transport;
  /** The request handler: the fast path first, then connect-node, then `fallback` (REST). */
  handler(fallback: NodeHandlerFn): DualRequestHandler;
}

/** Builds the services once and the three paths over them. */
export function createServerPipeline(o: ServerPipelineOptions): ServerPipeline {
  const limits = { readMaxBytes: o.maxMessageBytes, writeMaxBytes: o.maxMessageBytes };
  const unary: ServedService[] = [
    { service: DataService, impl: createDataServiceImpl(o.plane, o.api) },
    { service: OprcFunction, impl: createOprcFunctionImpl(o.plane, o.api) },
  ];
  const interceptors = [...o.interceptors];
  const routes = (router: ConnectRouter): void => {
    for (const s of unary) router.service(s.service as never, s.impl as never, limits);
    router.service(Health, o.health.impl);
    for (const s of o.services) router.service(s.service as never, s.impl as never, limits);
  };
  // Every unary method of every service, the node's own internal ones included (a write
  // forwarded from a follower is in a unary RaftService/ProposeBatch).
  const fast = o.fastPath
    ? createGrpcUnaryFastPath({ services: [...unary, ...o.services], ...limits, interceptors })
    : undefined;
  return {
    routes,
    services: [...unary.map((s) => s.service), Health, ...o.services.map((s) => s.service)],
    transport: createRouterTransport(routes, {
      router: { interceptors },
      transport: { interceptors: [...(o.inProcessInterceptors ?? [])] },
    }),
    edgeTransport: createRouterTransport(routes, { router: { interceptors } }),
    handler(fallback) {
      const connect = connectNodeAdapter({ routes, interceptors, ...limits, fallback });
      return (req, res) => {
        dropUnrepresentableDeadline(req.headers);
        if (
          fast !== undefined &&
          req.httpVersionMajor === 2 &&
          fast(req as Http2ServerRequest, res as Http2ServerResponse)
        ) {
          return;
        }
        connect(req as never, res as never);
      };
    },
  };
}

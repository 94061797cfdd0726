// The one server pipeline: every service implementation is built once, and the three ways
// a call arrives — connect-node (gRPC, gRPC-Web, Connect), the gRPC unary fast path, and
// the in-process clients REST and Zenoh use — run the same implementations under the same
// interceptors. An interceptor added here (metrics, tracing, authentication) cannot
// be skipped by any path.
import type { DescService } from "@bufbuild/protobuf";
import type { Client, ConnectRouter, Interceptor } from "@connectrpc/connect";
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
import type { DualRequestHandler, Http2StreamHandler } from "./dual-protocol-server.js";
import { createGrpcUnaryFastPath, type FastPathService } from "./grpc-unary-fast-path.js";
import { createInProcessClient } from "./in-process-client.js";
import { decodeSetKeyRequest } from "./request-decoders.js";

/** A service the node serves besides DataService, OprcFunction and Health. */
export interface ServedService {
  readonly service: DescService;
  readonly impl: object;
  /** Serve its server streams on the fast path too (see {@link FastPathService.streams}). */
  readonly streams?: boolean;
  /** Hand-written request readers on the fast path (see {@link FastPathService.decoders}). */
  readonly decoders?: FastPathService["decoders"];
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
  /** Told when the fast path could not send an answer (the stream is reset; see its `onSendError`). */
  readonly onSendError?: (err: unknown) => void;
  /**
   * Interceptors the in-process clients run before the server's (the node marks its own calls,
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
   * DataService, called in process (REST): the same handlers and interceptors, its calls
   * carrying the `inProcessInterceptors` (the node's trust mark: REST authorized them).
   */
  readonly data: Client<typeof DataService>;
  /** OprcFunction, called in process like {@link data}. */
  readonly functions: Client<typeof OprcFunction>;
  /** Any other served service, called in process like {@link data} (e.g. WatchService for SSE). */
  client<S extends DescService>(service: S): Client<S>;
  /**
   * DataService and OprcFunction in process without `inProcessInterceptors`, for an edge
   * whose calls carry their own credentials (Zenoh: a token in the attachment) and are
   * checked like a network call's.
   */
  readonly edge: {
    readonly data: Client<typeof DataService>;
    readonly functions: Client<typeof OprcFunction>;
  };
  /** The request handler: connect-node, then `fallback` (REST). */
  handler(fallback: NodeHandlerFn): DualRequestHandler;
  /**
   * The gRPC fast path, offered every HTTP/2 stream before {@link handler} (`undefined`
   * when the fast path is off).
   */
  readonly streamHandler: Http2StreamHandler | undefined;
}

/** Builds the services once and the three paths over them. */
export function createServerPipeline(o: ServerPipelineOptions): ServerPipeline {
  const limits = { readMaxBytes: o.maxMessageBytes, writeMaxBytes: o.maxMessageBytes };
  const dataImpl = createDataServiceImpl(o.plane, o.api);
  const functionsImpl = createOprcFunctionImpl(o.plane, o.api);
  const unary: ServedService[] = [
    { service: DataService, impl: dataImpl },
    { service: OprcFunction, impl: functionsImpl },
  ];
  // DataService's streams (ListValues, ListObjects) go on the fast path too; SetValue's
  // request, the hottest write, is read by hand.
  const fastServices: FastPathService[] = [
    {
      service: DataService,
      impl: dataImpl,
      streams: true,
      decoders: { setValue: decodeSetKeyRequest },
    },
    { service: OprcFunction, impl: functionsImpl },
    ...o.services,
  ];
  const interceptors = [...o.interceptors];
  // The caller's interceptors (the trust mark) run before the server's, as on a transport.
  const trusted = [...(o.inProcessInterceptors ?? []), ...interceptors];
  const routes = (router: ConnectRouter): void => {
    for (const s of unary) router.service(s.service as never, s.impl as never, limits);
    router.service(Health, o.health.impl);
    for (const s of o.services) router.service(s.service as never, s.impl as never, limits);
  };
  // Every unary method of every service, the node's own internal ones included (a write
  // forwarded from a follower is in a unary RaftService/ProposeBatch).
  const fast = o.fastPath
    ? createGrpcUnaryFastPath({
        services: fastServices,
        ...limits,
        interceptors,
        ...(o.onSendError === undefined ? {} : { onSendError: o.onSendError }),
      })
    : undefined;
  return {
    routes,
    services: [...unary.map((s) => s.service), Health, ...o.services.map((s) => s.service)],
    data: createInProcessClient(DataService, dataImpl, trusted),
    functions: createInProcessClient(OprcFunction, functionsImpl, trusted),
    client(service) {
      const served = o.services.find((s) => s.service.typeName === service.typeName);
      if (served === undefined) throw new Error(`${service.typeName} is not served`);
      return createInProcessClient(service, served.impl, trusted);
    },
    edge: {
      data: createInProcessClient(DataService, dataImpl, interceptors),
      functions: createInProcessClient(OprcFunction, functionsImpl, interceptors),
    },
    handler(fallback) {
      const connect = connectNodeAdapter({ routes, interceptors, ...limits, fallback });
      return (req, res) => {
        dropUnrepresentableDeadline(req.headers);
        connect(req as never, res as never);
      };
    },
    streamHandler:
      fast === undefined
        ? undefined
        : (stream, headers) => {
            dropUnrepresentableDeadline(headers);
            return fast(stream, headers);
          },
  };
}

import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { DataPlane } from "./data-plane.js";
import { createDataServiceImpl } from "./data-service.js";
import { Health } from "./gen/grpc/health/v1/health_pb.js";
import { CollectionService } from "./gen/oprc-admin_pb.js";
import { DataService } from "./gen/oprc-data_pb.js";
import { OprcFunction } from "./gen/oprc-invoke_pb.js";
import type { GrpcApiOptions } from "./grpc-api-options.js";
import { createHealthService, type HealthService } from "./health-service.js";
import { createOprcFunctionImpl } from "./oprc-function.js";

/**
 * Default maximum size of one request message and of one response message: 4 MiB, the
 * default of stock gRPC servers and clients, so a message that works here works with every
 * client. Raise both (here and in clients) for larger objects.
 */
export const DEFAULT_MAX_MESSAGE_BYTES: number = 4 * 1024 * 1024;

/** Options of {@link createOdgmConnectRoutes}. */
export interface OdgmConnectRoutesOptions extends GrpcApiOptions {
  /** The data plane serving DataService and OprcFunction. */
  plane: DataPlane;
  /**
   * The health service to register; `false` registers none. Default: a new
   * {@link createHealthService} with everything SERVING.
   */
  health?: HealthService | false | undefined;
  /** Handlers for `oprc.CollectionService`; registered only when given. */
  collections?: ServiceImpl<typeof CollectionService> | undefined;
  /**
   * Largest request message accepted (bytes); larger ones fail with RESOURCE_EXHAUSTED
   * before they are parsed. Default {@link DEFAULT_MAX_MESSAGE_BYTES}.
   */
  readMaxBytes?: number | undefined;
  /**
   * Largest response message sent (bytes); larger ones fail with RESOURCE_EXHAUSTED.
   * Default {@link DEFAULT_MAX_MESSAGE_BYTES}.
   */
  writeMaxBytes?: number | undefined;
}

/**
 * Returns a `routes` function registering DataService, OprcFunction, the gRPC health
 * service and (optionally) CollectionService on a Connect router, for
 * `connectNodeAdapter` (gRPC, gRPC-Web and Connect protocols on one handler).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http2";
 * import { connectNodeAdapter } from "@connectrpc/connect-node";
 * import { createOdgmConnectRoutes } from "@oprc/grpc-api";
 *
 * const handler = connectNodeAdapter({ routes: createOdgmConnectRoutes({ plane }) });
 * createServer(handler).listen(8080);
 * ```
 */
export function createOdgmConnectRoutes(
  options: OdgmConnectRoutesOptions,
): (router: ConnectRouter) => void {
  const { plane, health, collections, readMaxBytes, writeMaxBytes, ...apiOptions } = options;
  const limits = {
    readMaxBytes: readMaxBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    writeMaxBytes: writeMaxBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
  };
  const dataService = createDataServiceImpl(plane, apiOptions);
  const oprcFunction = createOprcFunctionImpl(plane, apiOptions);
  const healthService = health === false ? undefined : (health ?? createHealthService());
  return (router) => {
    router.service(DataService, dataService, limits);
    router.service(OprcFunction, oprcFunction, limits);
    if (healthService !== undefined) router.service(Health, healthService.impl);
    if (collections !== undefined) router.service(CollectionService, collections, limits);
  };
}

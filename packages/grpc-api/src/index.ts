// The wire contract: every message, enum and service descriptor generated from proto/
// (also alone, without the RPC stack, as "@oprc/grpc-api/messages").
// Generated code is public by definition (it *is* the contract), so it is re-exported whole.

export { COLLECTION_NAME_RULE, isCollectionName, quoteInput } from "./collection-name.js";
export type {
  DataPlane,
  DataPlaneCall,
  DataPlaneCapabilities,
  EntryBatch,
  EntryRead,
  EntryValue,
  EntryWrite,
  FunctionInvocation,
  InvocationPlane,
  InvocationResult,
  ListEntriesQuery,
  ListedEntry,
  ListedObject,
  ListObjectsQuery,
  ObjectDataPlane,
  ObjectInvocation,
  ObjectRef,
  ObjectWrite,
  PartitionRef,
  ShardStat,
  StoredEntry,
  StoredObject,
} from "./data-plane.js";
export { READ_CONSISTENCY_HEADER } from "./data-plane.js";
export type { DataPlaneErrorCode, DataPlaneErrorOptions } from "./data-plane-error.js";
// For hosts: serve the API over your own data plane.
export { DataPlaneError, isDataPlaneError, isDataPlaneErrorCode } from "./data-plane-error.js";
export { createDataServiceImpl } from "./data-service.js";
export type {
  GrpcApiOptions,
  InternalErrorInfo,
  ResolvedGrpcApiOptions,
} from "./grpc-api-options.js";
export { resolveGrpcApiOptions } from "./grpc-api-options.js";
export type { HealthService, HealthServiceOptions } from "./health-service.js";
export { createHealthService } from "./health-service.js";
export * from "./messages.js";
export type { OdgmConnectRoutesOptions } from "./odgm-connect-routes.js";
export { createOdgmConnectRoutes, DEFAULT_MAX_MESSAGE_BYTES } from "./odgm-connect-routes.js";
export { createOprcFunctionImpl } from "./oprc-function.js";
export type { RemoteDataPlane, RemoteDataPlaneOptions } from "./remote-data-plane.js";
export { createRemoteDataPlane, fromRemoteError } from "./remote-data-plane.js";
export type { ToConnectErrorOptions } from "./to-connect-error.js";
export {
  ACTUAL_VERSION_HEADER,
  EXPECTED_VERSION_HEADER,
  LEADER_HINT_HEADER,
  toConnectError,
  WARNING_HEADER,
} from "./to-connect-error.js";

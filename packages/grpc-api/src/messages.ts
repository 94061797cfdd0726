// @oprc/grpc-api/messages — every message, enum and service descriptor generated from
// proto/, and nothing else: it imports only @bufbuild/protobuf, so storage and event
// libraries get the wire types without loading the RPC stack (@connectrpc/*).
export * from "./gen/grpc/health/v1/health_pb.js";
export * from "./gen/oprc-admin_pb.js";
export * from "./gen/oprc-cluster_pb.js";
export * from "./gen/oprc-data_pb.js";
export * from "./gen/oprc-invoke_pb.js";
export * from "./gen/oprc-raft_pb.js";
export * from "./gen/oprc-storage_pb.js";
export * from "./gen/oprc-watch_pb.js";

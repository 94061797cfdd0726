// The wire contract: every message, enum and service descriptor generated from proto/.
// Generated code is public by definition (it *is* the contract), so it is re-exported whole.
export * from "./gen/oprc-data_pb.js";
export * from "./gen/oprc-invoke_pb.js";
export * from "./gen/oprc-storage_pb.js";

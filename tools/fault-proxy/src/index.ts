export type {
  FaultProxy,
  FaultProxyOptions,
  FaultProxyStats,
  ProxiedNode,
} from "./fault-proxy.js";
export { createFaultProxy } from "./fault-proxy.js";

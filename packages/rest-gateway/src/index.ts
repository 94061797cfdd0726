export type { GatewayErrorCode, GatewayErrorOptions } from "./gateway-error.js";
export {
  errorResponse,
  GATEWAY_ERROR_STATUS,
  GatewayError,
  isGatewayError,
} from "./gateway-error.js";
export type { HostRoute } from "./openapi-routes.js";
export type { RestGatewayOptions } from "./rest-gateway.js";
export {
  createRestGateway,
  DEFAULT_BODY_LIMIT,
  DEFAULT_TIMEOUT_MS,
  documentRoute,
} from "./rest-gateway.js";
export type { ServedGateway, ServeGatewayOptions } from "./serve-gateway.js";
export { serveGateway } from "./serve-gateway.js";

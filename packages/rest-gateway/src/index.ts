export { createRestGateway, DEFAULT_BODY_LIMIT, DEFAULT_TIMEOUT_MS } from "./rest-gateway.js";
export { GATEWAY_ERROR_STATUS, GatewayError, isGatewayError } from "./gateway-error.js";
export { serveGateway } from "./serve-gateway.js";

export type { RestGatewayOptions } from "./rest-gateway.js";
export type { GatewayErrorCode, GatewayErrorOptions } from "./gateway-error.js";
export type { ServeGatewayOptions, ServedGateway } from "./serve-gateway.js";

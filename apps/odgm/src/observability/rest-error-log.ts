// How the node logs the REST gateway's 5xx answers.
import type { GatewayError } from "@oprc/rest-gateway";
import type { Logger } from "pino";

/**
 * The gateway's `onServerError` for `logger`. A 500 is a bug: logged as an error with its
 * stack. A 502, 503 or 504 (no leader, a peer down, a deadline) is the cluster's state, which
 * the client is told to retry: one warning line with the upstream's message, not a stack per
 * request for as long as it lasts (the gRPC path logs neither).
 */
export function restErrorLogger(logger: Logger): (err: GatewayError, req: Request) => void {
  return (err, req) => {
    if (err.code === "internal") {
      logger.error({ err }, "REST request failed");
      return;
    }
    logger.warn(
      {
        code: err.code,
        method: req.method,
        path: new URL(req.url).pathname,
        ...(err.cause instanceof Error ? { cause: err.cause.message } : {}),
      },
      "REST request failed",
    );
  };
}

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import type { OdgmMetrics } from "./metrics.js";

const tracer = trace.getTracer("@oprc/odgm");

/** The object id a request addresses, for span attributes (`object.id_str`). */
function objectIdOf(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const m = message as { objectIdStr?: unknown; objectId?: unknown };
  if (typeof m.objectIdStr === "string" && m.objectIdStr !== "") return m.objectIdStr;
  if (typeof m.objectId === "bigint" && m.objectId !== 0n) return m.objectId.toString();
  return undefined;
}

/**
 * Counts every RPC by method and status code, times it, and wraps it in an OpenTelemetry
 * span carrying `rpc.method` and `object.id_str` (a no-op until an SDK is registered).
 */
export function createRpcInterceptor(metrics: OdgmMetrics): Interceptor {
  return (next) => async (req) => {
    const method = req.method.name;
    const started = performance.now();
    return tracer.startActiveSpan(`${req.service.typeName}/${method}`, async (span) => {
      span.setAttribute("rpc.system", "grpc");
      span.setAttribute("rpc.method", method);
      const id = req.stream ? undefined : objectIdOf(req.message);
      if (id !== undefined) span.setAttribute("object.id_str", id);
      try {
        const res = await next(req);
        metrics.rpcRequests.inc({ method, code: "ok" });
        return res;
      } catch (err) {
        const code = ConnectError.from(err).code;
        metrics.rpcRequests.inc({ method, code: Code[code]?.toLowerCase() ?? String(code) });
        span.setStatus({ code: SpanStatusCode.ERROR, message: Code[code] ?? String(code) });
        throw err;
      } finally {
        metrics.rpcDurationMs.observe({ method }, performance.now() - started);
        span.end();
      }
    });
  };
}

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import type { OdgmMetrics } from "./metrics.js";

const tracer = trace.getTracer("@oprc/odgm");

/** Reads W3C trace context (`traceparent`) from request headers. */
const HEADERS: TextMapGetter<Headers> = {
  get: (h, key) => h.get(key) ?? undefined,
  keys: (h) => [...h.keys()],
};

/** Status code label values: `invalid_argument`, `not_found`, … (`ok` for success). */
const CODE_LABEL: ReadonlyMap<number, string> = new Map(
  Object.entries(Code)
    .filter((e): e is [string, number] => typeof e[1] === "number")
    .map(([name, code]) => [code, name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
);

/** Normalization failures of ids and keys (the codes of `@oprc/oprc-id`'s IdError). */
const NORMALIZE_ERROR = /^\[(empty|too_long|invalid_char)\]/;

/** The object id a request addresses, for span attributes (`object.id_str`). */
function objectIdOf(message: unknown): { id: string; str: boolean } | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const m = message as { objectIdStr?: unknown; objectId?: unknown };
  if (typeof m.objectIdStr === "string" && m.objectIdStr !== "") {
    return { id: m.objectIdStr, str: true };
  }
  if (typeof m.objectId === "bigint" && m.objectId !== 0n) {
    return { id: m.objectId.toString(), str: false };
  }
  return undefined;
}

/**
 * Runs one RPC under the service's instrumentation: counts it by method and status code,
 * times it, observes string-id lengths and normalization failures, and wraps it in an
 * OpenTelemetry span carrying `rpc.method` and `object.id_str` (a no-op until an SDK
 * registers a tracer provider). `message` is the request (`undefined` for streams);
 * `header`, when given, may carry the caller's trace context (`traceparent`), which the
 * span joins.
 */
export type RpcInstrument = <T>(
  service: string,
  method: string,
  message: unknown,
  run: () => Promise<T>,
  header?: Headers,
) => Promise<T>;

/**
 * True when an OpenTelemetry SDK registered a tracer provider. Without one, spans are
 * no-ops, and starting an active no-op span still costs a context switch and closures on
 * every call (a tenth of a request's CPU in a profile), so the instrument skips them.
 */
function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider() as { getDelegate?: () => object };
  const delegate = provider.getDelegate?.() ?? provider;
  return delegate.constructor.name !== "NoopTracerProvider";
}

/** Creates the {@link RpcInstrument} shared by the Connect interceptor and the gRPC fast path. */
export function createRpcInstrument(metrics: OdgmMetrics): RpcInstrument {
  // Labelled children are resolved once per method, not on every call.
  const ok = new Map<string, { inc(): void }>();
  const duration = new Map<string, { observe(v: number): void }>();
  const okOf = (method: string) => {
    const c = ok.get(method) ?? metrics.rpcRequests.labels({ method, code: "ok" });
    ok.set(method, c);
    return c;
  };
  const durationOf = (method: string) => {
    const h = duration.get(method) ?? metrics.rpcDurationMs.labels({ method });
    duration.set(method, h);
    return h;
  };
  const untraced = async <T>(
    method: string,
    message: unknown,
    run: () => Promise<T>,
  ): Promise<T> => {
    const started = performance.now();
    const id = objectIdOf(message);
    if (id?.str === true) metrics.stringIdLength.observe(Buffer.byteLength(id.id));
    try {
      const res = await run();
      okOf(method).inc();
      return res;
    } catch (err) {
      countError(method, err);
      throw err;
    } finally {
      durationOf(method).observe(performance.now() - started);
    }
  };
  const countError = (method: string, err: unknown): ConnectError => {
    const ce = ConnectError.from(err);
    metrics.rpcRequests.inc({ method, code: CODE_LABEL.get(ce.code) ?? String(ce.code) });
    if (ce.code === Code.InvalidArgument && NORMALIZE_ERROR.test(ce.rawMessage)) {
      metrics.stringIdNormalizeErrors.inc();
    }
    return ce;
  };
  return (service, method, message, run, header) => {
    if (!tracingEnabled()) return untraced(method, message, run);
    const started = performance.now();
    const parent =
      header === undefined
        ? context.active()
        : propagation.extract(context.active(), header, HEADERS);
    const options = { kind: SpanKind.SERVER };
    return tracer.startActiveSpan(`${service}/${method}`, options, parent, async (span: Span) => {
      span.setAttribute("rpc.system", "grpc");
      span.setAttribute("rpc.method", method);
      const id = objectIdOf(message);
      if (id !== undefined) {
        span.setAttribute("object.id_str", id.id);
        if (id.str) metrics.stringIdLength.observe(Buffer.byteLength(id.id));
      }
      try {
        const res = await run();
        okOf(method).inc();
        return res;
      } catch (err) {
        const ce = countError(method, err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: Code[ce.code] ?? String(ce.code) });
        throw err;
      } finally {
        durationOf(method).observe(performance.now() - started);
        span.end();
      }
    });
  };
}

/** The Connect interceptor form of {@link createRpcInstrument}. */
export function createRpcInterceptor(instrument: RpcInstrument): Interceptor {
  return (next) => (req) =>
    instrument(
      req.service.typeName,
      req.method.name,
      req.stream ? undefined : req.message,
      () => next(req),
      req.header,
    );
}

// OpenTelemetry traces for the `odgm` command, configured from the standard OTEL_*
// variables: with an OTLP endpoint set, the node's RPC spans (see rpc-interceptor.ts) go to
// it over OTLP/HTTP; with none, no SDK is registered and spans stay no-ops.
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { Env } from "../config.js";
import { OdgmError } from "../odgm-error.js";

/** A registered tracing SDK. */
export interface Tracing {
  /** Where spans go (`…/v1/traces`). */
  readonly endpoint: string;
  /** Exports the spans still queued, then stops the SDK. */
  shutdown(): Promise<void>;
}

const configError = (variable: string, message: string): OdgmError =>
  new OdgmError("invalid_config", `${variable}: ${message}`, { variable });

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;

function samplerOf(env: Env): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on").toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw configError("OTEL_TRACES_SAMPLER", `expected one of ${SAMPLERS.join(", ")}`);
  }
  const ratio = (): Sampler => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim() || "1";
    const r = Number(raw);
    if (!Number.isFinite(r) || r < 0 || r > 1) {
      throw configError(
        "OTEL_TRACES_SAMPLER_ARG",
        `expected a ratio from 0 to 1, got ${JSON.stringify(raw)}`,
      );
    }
    return new TraceIdRatioBasedSampler(r);
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function bspNumber(env: Env, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw configError(name, `expected a positive integer, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/**
 * Registers the OpenTelemetry tracing SDK when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and neither `OTEL_SDK_DISABLED=true` nor
 * `OTEL_TRACES_EXPORTER=none` says otherwise); returns `undefined` and registers nothing
 * otherwise. Spans are exported in batches over OTLP/HTTP (JSON bodies); the exporter reads
 * `OTEL_EXPORTER_OTLP_*` (endpoint, headers, timeout, compression) itself, the resource
 * `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (service name default `odgm`).
 * Throws an `invalid_config` {@link OdgmError} naming the variable on an invalid value.
 */
export function startTracing(env: Env): Tracing | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const exporterName = (env.OTEL_TRACES_EXPORTER?.trim() || "otlp").toLowerCase();
  if (exporterName === "none") return undefined;
  if (exporterName !== "otlp") {
    throw configError(
      "OTEL_TRACES_EXPORTER",
      `expected otlp or none, got ${JSON.stringify(exporterName)}`,
    );
  }
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || undefined;
  const general = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
  if (specific === undefined && general === undefined) return undefined;
  const url = specific ?? `${(general as string).replace(/\/+$/, "")}/v1/traces`;
  const variable =
    specific === undefined ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw configError(variable, `expected an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw configError(variable, `expected an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = env[name]?.trim().toLowerCase();
    if (protocol === "grpc") {
      throw configError(
        name,
        "odgm exports traces over OTLP/HTTP only: use http/json or http/protobuf",
      );
    }
  }
  const sampler = samplerOf(env);
  const batch = {
    scheduledDelayMillis: bspNumber(env, "OTEL_BSP_SCHEDULE_DELAY"),
    exportTimeoutMillis: bspNumber(env, "OTEL_BSP_EXPORT_TIMEOUT"),
    maxQueueSize: bspNumber(env, "OTEL_BSP_MAX_QUEUE_SIZE"),
    maxExportBatchSize: bspNumber(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
  };
  const resource = resourceFromAttributes({ "service.name": "odgm" }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url }),
        ...Object.fromEntries(Object.entries(batch).filter(([, v]) => v !== undefined)),
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  let stopped: Promise<void> | undefined;
  return {
    endpoint: url,
    shutdown() {
      stopped ??= provider.shutdown().finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      });
      return stopped;
    },
  };
}

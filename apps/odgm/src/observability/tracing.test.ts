import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { isOdgmError } from "../odgm-error.js";
import { startTracing } from "./tracing.js";

const variableOf = (env: Record<string, string>): string | undefined => {
  try {
    startTracing(env);
  } catch (err) {
    return isOdgmError(err) ? err.variable : "not an OdgmError";
  }
  return undefined;
};

describe("startTracing", () => {
  it("registers nothing without an OTLP endpoint, or when disabled", () => {
    expect(startTracing({})).toBeUndefined();
    expect(startTracing({ OTEL_SERVICE_NAME: "x" })).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
    expect(startTracing({ ...endpoint, OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(startTracing({ ...endpoint, OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
    expect(trace.getTracer("t").startSpan("s").isRecording()).toBe(false);
  });

  it("exports to <endpoint>/v1/traces, or to the traces endpoint as given", async () => {
    const a = startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" });
    expect(a?.endpoint).toBe("http://127.0.0.1:4318/v1/traces");
    expect(trace.getTracer("t").startSpan("s").isRecording()).toBe(true);
    await a?.shutdown();
    expect(trace.getTracer("t").startSpan("s").isRecording()).toBe(false);
    const b = startTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example/otlp/traces",
    });
    expect(b?.endpoint).toBe("https://collector.example/otlp/traces");
    await b?.shutdown();
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: "jaeger" }, "OTEL_TRACES_EXPORTER"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT"],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, "OTEL_TRACES_SAMPLER"],
    [
      { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" },
      "OTEL_TRACES_SAMPLER_ARG",
    ],
    [{ OTEL_BSP_SCHEDULE_DELAY: "soon" }, "OTEL_BSP_SCHEDULE_DELAY"],
  ])("refuses %j naming %s", (env, variable) => {
    expect(variableOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", ...env })).toBe(
      variable,
    );
  });
});

// Traces go somewhere: a real `odgm` process with OTEL_EXPORTER_OTLP_ENDPOINT exports its
// RPC spans over OTLP/HTTP to a receiver in this test (a node:http server collecting POSTs
// to /v1/traces). The batch delay is an hour, so the spans arrive only because SIGTERM's
// graceful stop flushes them.

import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOdgmProcess } from "./fixtures/odgm-process.js";
import { tempDir } from "./fixtures/temp-node.js";

interface OtlpSpan {
  traceId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}
interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

const received: { path: string; contentType: string; token: string; body: OtlpRequest }[] = [];
let receiver: Server;
let endpoint: string;
let dataDir: string | undefined;
beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        path: req.url ?? "",
        contentType: String(req.headers["content-type"]),
        token: String(req.headers["x-collector-token"]),
        body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpRequest,
      });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

describe("OpenTelemetry over OTLP/HTTP", () => {
  it("exports a request's span, in the caller's trace, flushed on SIGTERM", async () => {
    dataDir = await tempDir("odgm-otel-");
    const node = await startOdgmProcess({
      ODGM_DATA_DIR: dataDir,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_SERVICE_NAME: "odgm-under-test",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=s3cret",
      OTEL_BSP_SCHEDULE_DELAY: "3600000",
    });
    try {
      expect(node.output()).toContain("exporting traces over OTLP/HTTP");
      const data = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      await data.setValue(
        {
          clsId: "default",
          objectIdStr: "traced",
          keyStr: "k",
          value: { data: new Uint8Array([1]) },
        },
        { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
      );
      const restTrace = "0af7651916cd43dd8448eb211c80319c";
      const rest = await fetch(`${node.url}/api/class/default/0/objects/traced/values/k`, {
        headers: { traceparent: `00-${restTrace}-b7ad6b7169203331-01` },
      });
      expect(rest.status).toBe(200);
      // Nothing yet: the batch waits an hour.
      expect(received).toEqual([]);
      node.child.kill("SIGTERM");
      expect(await node.exited).toBe(0);

      expect(received.length).toBeGreaterThan(0);
      expect(received.every((r) => r.path === "/v1/traces")).toBe(true);
      expect(received[0]?.contentType).toMatch(/^application\/json/);
      expect(received[0]?.token).toBe("s3cret");
      const resources = received.flatMap((r) => r.body.resourceSpans);
      const service = resources[0]?.resource.attributes.find((a) => a.key === "service.name");
      expect(service?.value.stringValue).toBe("odgm-under-test");
      const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      const set = spans.find((s) => s.name === "oprc.DataService/SetValue");
      expect(set?.traceId).toBe(traceId);
      expect(set?.parentSpanId).toBe("00f067aa0ba902b7");
      expect(set?.kind).toBe(2); // SERVER
      const attrs = Object.fromEntries(
        (set?.attributes ?? []).map((a) => [a.key, a.value.stringValue]),
      );
      expect(attrs).toMatchObject({ "rpc.method": "SetValue", "object.id_str": "traced" });
      // The REST read ran through the same handlers, in the REST caller's trace.
      const get = spans.find((s) => s.name === "oprc.DataService/GetValue");
      expect(get?.traceId).toBe(restTrace);
    } finally {
      if (node.child.exitCode === null) node.child.kill("SIGKILL");
      await node.exited;
    }
  });
});

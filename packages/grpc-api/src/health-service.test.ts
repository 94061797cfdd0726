import { createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as S } from "./gen/grpc/health/v1/health_pb.js";
import { createHealthService } from "./health-service.js";

describe("createHealthService", () => {
  it("shutdown marks everything NOT_SERVING and freezes statuses", async () => {
    const health = createHealthService({ initial: { "": S.SERVING, a: S.SERVING } });
    const client = createClient(
      Health,
      createRouterTransport((r) => r.service(Health, health.impl)),
    );
    health.shutdown();
    health.setStatus("a", S.SERVING);
    expect((await client.check({ service: "a" })).status).toBe(S.NOT_SERVING);
    expect((await client.check({ service: "" })).status).toBe(S.NOT_SERVING);
  });

  it("Watch of an unknown service answers SERVICE_UNKNOWN, then follows it once registered", async () => {
    const health = createHealthService({ initial: {} });
    const client = createClient(
      Health,
      createRouterTransport((r) => r.service(Health, health.impl)),
    );
    const ac = new AbortController();
    const it = client.watch({ service: "late" }, { signal: ac.signal })[Symbol.asyncIterator]();
    expect((await it.next()).value.status).toBe(S.SERVICE_UNKNOWN);
    health.setStatus("late", S.SERVING);
    expect((await it.next()).value.status).toBe(S.SERVING);
    ac.abort();
    await it.return?.();
    expect(health.getStatus("late")).toBe(S.SERVING);
  });
});

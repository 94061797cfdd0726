import { hashId, partitionOf } from "@oprc/oprc-id";
import { describe, expect, it } from "vitest";
import { REST_SUITE_METRIC, type SuiteContext } from "./suite-context.js";

/** Capabilities, health, readiness, metrics, the debug hash route, OpenAPI. */
export function serviceRouteCases(s: SuiteContext): void {
  const { send, expectError } = s;
  describe("service routes", () => {
    it("capabilities, healthz, readyz, metrics, openapi.json", async () => {
      const caps = (await (await send("GET", "/api/capabilities")).json()) as Record<
        string,
        boolean
      >;
      expect(Object.keys(caps).sort()).toEqual([
        "eventPipelineV2",
        "granularEntryStorage",
        "stringEntryKeys",
        "stringIds",
      ]);
      expect(await (await send("GET", "/healthz")).json()).toEqual({ status: "ok" });
      expect((await send("GET", "/readyz")).status).toBe(200);
      const metrics = await send("GET", "/metrics");
      expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
      expect(await metrics.text()).toContain(REST_SUITE_METRIC);
      const doc = (await (await send("GET", "/openapi.json")).json()) as {
        paths: Record<string, Record<string, unknown>>;
      };
      expect(Object.keys(doc.paths["/api/class/{cls}/{pid}/objects/{oid}"] ?? {}).sort()).toEqual([
        "delete",
        "get",
        "patch",
        "put",
      ]);
    });

    it("debug/object-hash normalizes and hashes like oprc-id", async () => {
      const res = await send("GET", "/debug/object-hash/order/0/User-1?partitions=16");
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        objectId: "user-1",
        kind: "string",
        partitions: 16,
        partition: partitionOf("user-1", 16),
      });
      expect(body.hash).toBe(hashId("user-1").toString());
      const numeric = (await (
        await send("GET", "/debug/object-hash/order/0/042")
      ).json()) as Record<string, unknown>;
      expect(numeric).toMatchObject({
        objectId: "42",
        kind: "numeric",
        hash: hashId("42").toString(),
      });
      await expectError(await send("GET", "/debug/object-hash/order/0/x?partitions=0"), 400);
    });
  });
}

// Seed 000 §8's string-id metrics on a real node: objects created under a string id,
// string-keyed entries written, and the time spent normalizing string object ids.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

let n: TempNode;
beforeAll(async () => {
  n = await startTempNode();
});
afterAll(async () => {
  await n?.close();
});

/** A metric's value (a counter's for `default`, a histogram's count). */
async function metricValue(name: string): Promise<number> {
  const metric = n.node.metrics.registry.getSingleMetric(name);
  const { values } = (await metric?.get()) ?? { values: [] };
  if (name.endsWith("_ns")) {
    return (
      values.find((v) => (v as { metricName?: string }).metricName === `${name}_count`)?.value ?? 0
    );
  }
  return values.find((v) => v.labels.collection === "default")?.value ?? 0;
}

describe("string-id metrics", () => {
  it("counts objects created under string ids and string-keyed entries written", async () => {
    const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
    const v = { data: new Uint8Array([1]) };
    const created = () => metricValue("odgm_objects_string_created_total");
    const set = () => metricValue("odgm_entries_string_set_total");
    const normalized = () => metricValue("odgm_id_normalize_ns");

    await data.setValue({ clsId: "default", objectIdStr: "s1", keyStr: "a", value: v });
    expect([await created(), await set(), await normalized()]).toEqual([1, 1, 1]);
    // The same object again: an update, not a creation.
    await data.setValue({ clsId: "default", objectIdStr: "s1", keyStr: "a", value: v });
    expect([await created(), await set(), await normalized()]).toEqual([1, 2, 2]);
    // A numeric id and a numeric key: neither counts, and nothing string is normalized.
    await data.setValue({ clsId: "default", objectId: 7n, key: 3, value: v });
    expect([await created(), await set(), await normalized()]).toEqual([1, 2, 2]);
    // A numeric id with string keys: entries count, the object does not.
    await data.batchSetValues({
      clsId: "default",
      objectId: 8n,
      values: { x: v, y: v, z: v },
    });
    expect([await created(), await set()]).toEqual([1, 5]);
    // A new string-id object over REST (through the same handlers).
    const put = await fetch(`${n.node.url}/api/class/default/0/objects/s2/values/b`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ value: 1 }),
    });
    expect(put.status).toBe(204);
    expect([await created(), await set()]).toEqual([2, 6]);
    // An id refused by normalization is still timed.
    const before = await normalized();
    const err = await data
      .getValue({ clsId: "default", objectIdStr: "Not Valid!", keyStr: "a" })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect(await normalized()).toBe(before + 1);
    // Deleting does not count as setting.
    await data.deleteValue({ clsId: "default", objectIdStr: "s1", keyStr: "a" });
    expect(await set()).toBe(6);
  });
});

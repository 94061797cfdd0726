// Spec §12 regression "batches are not atomic and CAS races", end to end: many clients race
// compare-and-swap batches on one object over real gRPC against a real node (RocksDB, sync
// on); exactly one wins each round, the losers get ABORTED and wrote nothing, and plain
// concurrent writers produce contiguous versions with no lost update.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
let temp: TempNode;
let client: ReturnType<typeof createClient<typeof DataService>>;

beforeAll(async () => {
  temp = await startTempNode({ ODGM_SYNC_WRITES: "true" });
  client = createClient(DataService, createGrpcTransport({ baseUrl: temp.node.url }));
});
afterAll(async () => temp?.close());

describe("concurrency against a real node", () => {
  it("concurrent CAS batches with the same expected version: exactly one wins per round", async () => {
    const racers = 16;
    for (let round = 0; round < 5; round++) {
      const expected = BigInt(round);
      const outcomes = await Promise.all(
        Array.from({ length: racers }, (_, i) =>
          client
            .batchSetValues({
              clsId: "default",
              objectIdStr: "cas-race",
              values: { winner: { data: utf8(`r${round}-c${i}`) }, [`c${i}`]: { data: utf8("x") } },
              expectedObjectVersion: expected,
            })
            .then(
              () => ({ ok: true as const, i }),
              (err: unknown) => ({ ok: false as const, i, code: ConnectError.from(err).code }),
            ),
        ),
      );
      const winners = outcomes.filter((o) => o.ok);
      expect(winners).toHaveLength(1);
      for (const o of outcomes) if (!o.ok) expect(o.code).toBe(Code.Aborted);
      const winner = winners[0]?.i;
      const got = await client.getValue({
        clsId: "default",
        objectIdStr: "cas-race",
        keyStr: "winner",
      });
      expect(new TextDecoder().decode(got.value?.data)).toBe(`r${round}-c${winner}`);
      expect(got.objectVersion).toBe(expected + 1n);
      // Losers wrote nothing: of this round's per-client keys only the winner's exists.
      for (let i = 0; i < racers; i++) {
        const k = await client.getValue({
          clsId: "default",
          objectIdStr: "cas-race",
          keyStr: `c${i}`,
        });
        if (round === 0) expect(k.value === undefined).toBe(i !== winner);
      }
    }
  });

  it("concurrent unconditional writes get contiguous versions and lose nothing", async () => {
    const writers = 32;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        client.setValue({
          clsId: "default",
          objectIdStr: "contiguous",
          keyStr: `k${i}`,
          value: { data: utf8(String(i)) },
        }),
      ),
    );
    const seen: bigint[] = [];
    for await (const env of client.listValues({
      clsId: "default",
      objectIdStr: "contiguous",
      limit: 100,
    })) {
      seen.push(env.version);
    }
    expect(seen).toHaveLength(writers);
    expect([...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(
      Array.from({ length: writers }, (_, i) => BigInt(i + 1)),
    );
  });
});

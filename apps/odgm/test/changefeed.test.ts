// The change feed on a real node (RocksDB, HTTP/2 on loopback): gRPC Watch resumes across a
// client disconnect and a server restart without a gap or a duplicate over 10,000 mutations
// of numeric and string ids; a compacted start is refused naming the oldest revision;
// idle watchers get progress; filters return exactly what a model of the writes says;
// a standards-following EventSource follows the SSE route across a restart; bad input gets
// clear errors and a storm of watchers leaves the node serving.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ChangeAction,
  type ChangeRecord,
  DataService,
  type WatchRequestSchema,
  WatchService,
} from "@oprc/grpc-api";
import { serveGateway } from "@oprc/rest-gateway";
import { freePorts } from "@oprc/test-config/ports";
import { EventSource } from "eventsource";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode, testTempDir } from "./fixtures/temp-node.js";

const enc = new TextEncoder();
const v = (s: string) => ({ data: enc.encode(s) });
const COLLECTIONS = JSON.stringify([{ name: "c" }, { name: "m" }]);

const clients = (n: TempNode) => {
  const transport = createGrpcTransport({ baseUrl: n.node.url });
  return {
    data: createClient(DataService, transport),
    watch: createClient(WatchService, transport),
  };
};

/** Reads changes until `stop` says so (or the stream ends); returns them and the last progress. */
async function collect(
  n: TempNode,
  req: MessageInitShape<typeof WatchRequestSchema>,
  stop: (seen: ChangeRecord[]) => boolean,
  signal?: AbortSignal,
): Promise<ChangeRecord[]> {
  const seen: ChangeRecord[] = [];
  const ac = new AbortController();
  signal?.addEventListener("abort", () => ac.abort());
  try {
    for await (const m of clients(n).watch.watch({ clsId: "c", ...req }, { signal: ac.signal })) {
      if (m.event.case === "change") seen.push(m.event.value);
      if (stop(seen)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    ac.abort();
  }
  return seen;
}

describe("gRPC Watch", () => {
  it("resumes after a client disconnect and a server restart: 10,000 mutations, no gap, no duplicate", async () => {
    const dir = await testTempDir("odgm-feed-");
    let node = await startTempNode({ ODGM_COLLECTION: COLLECTIONS }, dir);
    const N = 10_000;
    const idOf = (i: number) =>
      i % 2 === 0 ? { objectId: BigInt((i % 97) + 1) } : { objectIdStr: `s-${i % 89}` };
    const write = async (from: number, to: number, n: TempNode) => {
      const { data } = clients(n);
      const CONC = 32;
      let next = from;
      await Promise.all(
        Array.from({ length: CONC }, async () => {
          while (next < to) {
            const i = next++;
            await data.setValue({
              clsId: "c",
              ...idOf(i),
              keyStr: `k${i % 5}`,
              value: v(String(i)),
            });
          }
        }),
      );
    };
    try {
      await write(0, 4_000, node);
      // Read 2,500 from the start, then drop the connection.
      const a = await collect(node, { startRevision: 1n }, (s) => s.length >= 2_500);
      await write(4_000, 7_000, node);
      // Restart the node; resume where the client stopped.
      await node.close();
      node = await startTempNode({ ODGM_COLLECTION: COLLECTIONS }, dir);
      const resumeAt = (a.at(-1)?.revision ?? 0n) + 1n;
      await write(7_000, N, node);
      const b = await collect(node, { startRevision: resumeAt }, (s) => a.length + s.length >= N);
      const revisions = [...a, ...b].map((r) => r.revision);
      expect(revisions.length).toBe(N);
      expect(revisions).toEqual(Array.from({ length: N }, (_, i) => BigInt(i + 1)));
      // Every record names its object in both forms where it has a numeric one.
      for (const r of [...a, ...b]) {
        if (r.objectIdStr.startsWith("s-")) expect(r.objectId).toBeUndefined();
        else expect(r.objectId).toBe(BigInt(r.objectIdStr));
        expect(r.changes).toHaveLength(1);
      }
    } finally {
      await node.close();
    }
  }, 240_000);
});

describe("compaction, progress and bad input", () => {
  let node: TempNode;
  beforeAll(async () => {
    node = await startTempNode({
      ODGM_COLLECTION: COLLECTIONS,
      ODGM_CHANGEFEED_RETENTION_RECORDS: "10",
      ODGM_CHANGEFEED_COMPACT_INTERVAL_MS: "20",
    });
  });
  afterAll(async () => node?.close());

  it("refuses a compacted start naming the oldest available revision", async () => {
    const { data, watch } = clients(node);
    for (let i = 0; i < 50; i++)
      await data.setValue({ clsId: "m", objectIdStr: "o", keyStr: "k", value: v(String(i)) });
    // Compaction runs in the background: wait until it removed the start.
    // (Runs during the writes left older starts; wait for the one after the last write.)
    let err: ConnectError | undefined;
    for (
      let tries = 0;
      tries < 400 && err?.metadata.get("odgm-oldest-revision") !== "41";
      tries++
    ) {
      try {
        for await (const _ of watch.watch({ clsId: "m", startRevision: 1n })) break;
      } catch (e) {
        err = ConnectError.from(e);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(err?.code).toBe(Code.FailedPrecondition);
    expect(err?.rawMessage).toMatch(
      /start_revision 1 of m\/0 is compacted; the oldest available revision is 41/,
    );
    expect(err?.metadata.get("odgm-oldest-revision")).toBe("41");
  });

  it("confirms a watch at once and sends progress while idle", async () => {
    const { data, watch } = clients(node);
    await data.setValue({ clsId: "c", objectIdStr: "p", keyStr: "k", value: v("x") });
    const progress: bigint[] = [];
    for await (const m of watch.watch({ clsId: "c", progressIntervalMs: 50 })) {
      if (m.event.case === "progress") progress.push(m.event.value.revision);
      if (progress.length >= 3) break;
    }
    const head = progress[0] as bigint;
    expect(head).toBeGreaterThan(0n);
    expect(progress).toEqual([head, head, head]);
  });

  it("answers bad requests with clear errors", async () => {
    const { watch } = clients(node);
    const code = async (req: MessageInitShape<typeof WatchRequestSchema>) => {
      try {
        for await (const _ of watch.watch({ clsId: "c", ...req })) break;
        return Code[0 as Code] ?? "OK";
      } catch (e) {
        const ce = ConnectError.from(e);
        return `${Code[ce.code]}: ${ce.rawMessage}`;
      }
    };
    expect(await code({ clsId: "nope" })).toMatch(
      /NotFound: \[not_found\] collection "nope" does not exist/,
    );
    expect(await code({ partitionIds: [7] })).toMatch(
      /NotFound: \[not_found\] collection c has no partition 7/,
    );
    expect(await code({ includeValues: true })).toMatch(
      /FailedPrecondition: .*ODGM_CHANGEFEED_VALUES=true/,
    );
    expect(await code({ idPrefix: "*bad*" })).toMatch(/InvalidArgument/);
    expect(await code({ actions: [99 as ChangeAction] })).toMatch(
      /InvalidArgument: \[invalid_argument\] unknown action 99/,
    );
    for (const [query, message] of [
      ["?start_revision=-1", /start_revision must be a revision/],
      ["?start_revision=99999999999999999999999", /start_revision must be a revision/],
      ["?actions=create,explode", /unknown action "explode"/],
      ["?bogus=1", /unknown query parameter "bogus"/],
    ] as const) {
      const res = await fetch(`${node.node.url}/api/class/c/0/changes${query}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    const garbage = await fetch(`${node.node.url}/api/class/c/0/changes`, {
      headers: { "last-event-id": "abc" },
    });
    expect(garbage.status).toBe(400);
  });

  it("opens and drops 2,000 watchers and keeps serving", async () => {
    const { data } = clients(node);
    const gauge = async () =>
      Number(
        /^odgm_changefeed_watchers (\d+)/m.exec(
          await (await fetch(`${node.node.url}/metrics`)).text(),
        )?.[1],
      );
    const before = await gauge();
    // Four connections: one holds at most 1,000 concurrent streams (the node's limit).
    const watchers = Array.from({ length: 4 }, () => clients(node).watch);
    const opened = await Promise.all(
      Array.from({ length: 2_000 }, async (_, i) => {
        const watch = watchers[i % 4] as (typeof watchers)[0];
        const ac = new AbortController();
        const it = watch.watch({ clsId: "c" }, { signal: ac.signal })[Symbol.asyncIterator]();
        await it.next(); // the confirmation
        return ac;
      }),
    );
    expect(await gauge()).toBe(before + 2_000);
    for (const ac of opened) ac.abort();
    for (let i = 0; i < 100 && (await gauge()) > before; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await gauge()).toBeLessThanOrEqual(before);
    await data.setValue({ clsId: "c", objectIdStr: "after", keyStr: "k", value: v("ok") });
    expect((await fetch(`${node.node.url}/readyz`)).status).toBe(200);
  }, 120_000);
});

describe("filters against a model of the writes", () => {
  let node: TempNode;
  beforeAll(async () => {
    node = await startTempNode({
      ODGM_COLLECTION: JSON.stringify([{ name: "c", partitionCount: 512 }]),
    });
  });
  afterAll(async () => node?.close());

  type Op = { id: string; key: string; del: boolean };
  it("prefix, object, key and action filters return exactly the matching changes", async () => {
    let partition = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            id: fc.constantFrom("a1", "a2", "b1", "7", "70"),
            key: fc.constantFrom("x", "xy", "y", "3"),
            del: fc.boolean(),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        fc.record({
          objectId: fc.option(fc.constantFrom("a1", "7"), { nil: undefined }),
          idPrefix: fc.option(fc.constantFrom("a", "7", "b1"), { nil: undefined }),
          keyPrefix: fc.option(fc.constantFrom("x", "y", "3"), { nil: undefined }),
          actions: fc.subarray([ChangeAction.CREATE, ChangeAction.UPDATE, ChangeAction.DELETE]),
        }),
        async (ops: Op[], f) => {
          const p = partition++;
          const { data } = clients(node);
          // The model: which keys each object has, so every op's action is known.
          const state = new Map<string, Set<string>>();
          const expected: string[] = [];
          let rev = 0n;
          for (const op of ops) {
            const keys = state.get(op.id) ?? new Set<string>();
            state.set(op.id, keys);
            const ref = { clsId: "c", partitionId: p, objectIdStr: op.id, keyStr: op.key };
            if (op.del) {
              await data.deleteValue(ref);
              if (!keys.has(op.key)) continue;
              keys.delete(op.key);
            } else {
              await data.setValue({ ...ref, value: v("v") });
            }
            rev++;
            const action = op.del
              ? ChangeAction.DELETE
              : keys.has(op.key)
                ? ChangeAction.UPDATE
                : ChangeAction.CREATE;
            if (!op.del) keys.add(op.key);
            const match =
              (f.objectId === undefined || op.id === f.objectId) &&
              (f.idPrefix === undefined || op.id.startsWith(f.idPrefix)) &&
              (f.keyPrefix === undefined || op.key.startsWith(f.keyPrefix)) &&
              (f.actions.length === 0 || f.actions.includes(action));
            if (match) expected.push(`${rev} ${op.id} ${op.key} ${ChangeAction[action]}`);
          }
          // Catch up from 1 and stop at the confirmation of the head (a progress message).
          const got: string[] = [];
          const ac = new AbortController();
          // Bounded: a watch that never reaches the head ends here and the comparison fails.
          const bound = setTimeout(() => ac.abort(), 20_000);
          let progressSeen = 0;
          try {
            for await (const m of clients(node).watch.watch(
              {
                clsId: "c",
                partitionIds: [p],
                startRevision: 1n,
                progressIntervalMs: 30,
                actions: f.actions,
                ...(f.objectId === undefined ? {} : { objectIdStr: f.objectId }),
                ...(f.idPrefix === undefined ? {} : { idPrefix: f.idPrefix }),
                ...(f.keyPrefix === undefined ? {} : { keyPrefix: f.keyPrefix }),
              },
              { signal: ac.signal },
            )) {
              if (m.event.case === "change") {
                for (const c of m.event.value.changes) {
                  got.push(
                    `${m.event.value.revision} ${m.event.value.objectIdStr} ${c.key} ${ChangeAction[c.action]}`,
                  );
                }
              } else if (
                m.event.case === "progress" &&
                ++progressSeen > 1 &&
                m.event.value.revision >= rev
              ) {
                break;
              }
            }
          } catch (err) {
            if (!ac.signal.aborted) throw err;
          } finally {
            clearTimeout(bound);
          }
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 25, endOnFailure: true },
    );
  }, 240_000);
});

/**
 * An EventSource on the node itself or on a standalone gateway in front of it follows 40
 * writes across a restart of the node (same port) and sees every revision once, in order.
 */
async function followAcrossRestart(through: "node" | "gateway"): Promise<void> {
  const dir = await testTempDir("odgm-sse-");
  const [port] = await freePorts(1);
  const env = { ODGM_COLLECTION: COLLECTIONS, ODGM_HTTP_PORT: String(port) };
  let node = await startTempNode(env, dir);
  const gateway =
    through === "gateway"
      ? await serveGateway({ endpoint: node.node.url, port: 0, hostname: "127.0.0.1" })
      : undefined;
  const seen: { id: string; revision: string; object: string }[] = [];
  const es = new EventSource(
    `${gateway?.url ?? node.node.url}/api/class/c/0/changes?start_revision=1&progress_ms=100`,
  );
  es.addEventListener("change", (e) => {
    const r = JSON.parse(e.data) as { revision: string; objectIdStr: string };
    seen.push({ id: e.lastEventId, revision: r.revision, object: r.objectIdStr });
  });
  const until = async (n: number) => {
    for (let i = 0; i < 600 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 50));
  };
  try {
    const { data } = clients(node);
    for (let i = 0; i < 20; i++)
      await data.setValue({ clsId: "c", objectIdStr: `o${i}`, keyStr: "k", value: v("1") });
    await until(20);
    await node.close();
    // Down long enough that the EventSource tries (and fails) to reconnect meanwhile.
    await new Promise((r) => setTimeout(r, 3_000));
    node = await startTempNode(env, dir);
    const again = clients(node).data;
    for (let i = 20; i < 40; i++)
      await again.setValue({ clsId: "c", objectId: BigInt(i), keyStr: "k", value: v("1") });
    await until(40);
    expect(seen.map((s) => s.revision)).toEqual(
      Array.from({ length: 40 }, (_, i) => String(i + 1)),
    );
    expect(seen.every((s) => s.id === s.revision)).toBe(true);
    expect(seen[39]?.object).toBe("39");
    expect(es.readyState).not.toBe(EventSource.CLOSED);
  } finally {
    es.close();
    await gateway?.close();
    await node.close();
  }
}

describe("Server-Sent Events", () => {
  it("an EventSource follows the feed across a node restart without a gap or a duplicate", async () => {
    await followAcrossRestart("node");
  }, 120_000);

  it("the standalone gateway serves the feed, and its EventSource survives the node's restart", async () => {
    await followAcrossRestart("gateway");
  }, 120_000);

  it("is in the OpenAPI document", async () => {
    const node = await startTempNode({ ODGM_COLLECTION: COLLECTIONS });
    try {
      const doc = (await (await fetch(`${node.node.url}/openapi.json`)).json()) as {
        paths: Record<string, { get?: { responses: Record<string, { content?: object }> } }>;
      };
      const route = doc.paths["/api/class/{cls}/{pid}/changes"];
      expect(route?.get?.responses["200"]?.content).toHaveProperty(["text/event-stream"]);
    } finally {
      await node.close();
    }
  });
});

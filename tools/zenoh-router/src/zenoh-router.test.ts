// The loopback router driven by real @eclipse-zenoh/zenoh-ts sessions: the client library
// is the conformance check (rerun when upgrading zenoh-ts).
import {
  Config,
  ConsolidationMode,
  Duration,
  Locality,
  open,
  type Query,
  type Reply,
  type Sample,
  SampleKind,
  type Session,
} from "@eclipse-zenoh/zenoh-ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createZenohRouter, type ZenohRouter } from "./zenoh-router.js";

let router: ZenohRouter;
const opened: Session[] = [];

async function session(): Promise<Session> {
  const s = await open(new Config(router.locator, 5000));
  opened.push(s);
  return s;
}

/** Resolves once `predicate` holds, checking after every event the caller records. */
function collector<T>() {
  const items: T[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  return {
    items,
    push(item: T) {
      items.push(item);
      for (const w of waiters.splice(0)) {
        if (items.length >= w.n) w.resolve();
        else waiters.push(w);
      }
    },
    until(n: number): Promise<T[]> {
      if (items.length >= n) return Promise.resolve(items);
      return new Promise((resolve) => waiters.push({ n, resolve: () => resolve(items) }));
    },
  };
}

async function replies(receiver: AsyncIterable<Reply> | undefined): Promise<Reply[]> {
  const out: Reply[] = [];
  if (!receiver) return out;
  for await (const r of receiver) out.push(r);
  return out;
}

function okText(reply: Reply): string {
  const result = reply.result();
  if ("kind" in result) return `${result.keyexpr().toString()}=${result.payload().toString()}`;
  return `ERR ${result.payload().toString()}`;
}

beforeAll(async () => {
  router = await createZenohRouter({ port: 0 });
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});
afterAll(async () => {
  await router.close();
});

describe("pub/sub", () => {
  it("delivers puts and deletes to every intersecting subscriber, including the sender's", async () => {
    const a = await session();
    const b = await session();
    const onB = collector<Sample>();
    const onA = collector<Sample>();
    await b.declareSubscriber("demo/**", { handler: (s: Sample) => onB.push(s) });
    await a.declareSubscriber("demo/*/x", { handler: (s: Sample) => onA.push(s) });
    await a.put("demo/one/x", "hello");
    await a.put("other/one/x", "ignored");
    await a.delete("demo/two");
    const pub = await a.declarePublisher("demo/pub/x");
    await pub.put("via-publisher");
    const got = await onB.until(3);
    expect(got.map((s) => [s.keyexpr().toString(), s.kind(), s.payload().toString()])).toEqual([
      ["demo/one/x", SampleKind.PUT, "hello"],
      ["demo/two", SampleKind.DELETE, ""],
      ["demo/pub/x", SampleKind.PUT, "via-publisher"],
    ]);
    const own = await onA.until(2);
    expect(own.map((s) => s.keyexpr().toString())).toEqual(["demo/one/x", "demo/pub/x"]);
  });

  it("honours locality: a REMOTE subscriber never sees its own session's puts", async () => {
    const a = await session();
    const b = await session();
    const remoteOnly = collector<Sample>();
    await a.declareSubscriber("loc/k", {
      allowedOrigin: Locality.REMOTE,
      handler: (s: Sample) => remoteOnly.push(s),
    });
    await a.put("loc/k", "own");
    await b.put("loc/k", "other");
    const got = await remoteOnly.until(1);
    expect(got.map((s) => s.payload().toString())).toEqual(["other"]);
  });

  it("answers a double undeclare with an error", async () => {
    const a = await session();
    const sub = await a.declareSubscriber("x/y", { handler: () => {} });
    await sub.undeclare();
    await expect(sub.undeclare()).rejects.toThrow(/unknown subscriber/);
  });
});

describe("get/reply", () => {
  it("routes a get to the queryable, with parameters and payload, and ends with the final", async () => {
    const a = await session();
    const b = await session();
    await b.declareQueryable("svc/**", {
      handler: async (q: Query) => {
        const who = q.parameters().get("who") ?? "?";
        await q.reply(q.keyExpr(), `hi ${who} ${q.payload()?.toString() ?? ""}`);
        await q.finalize();
      },
    });
    const got = await replies(await a.get("svc/greet?who=ann", { payload: "p" }));
    expect(got.map(okText)).toEqual(["svc/greet=hi ann p"]);
  });

  it("carries error replies and delete replies", async () => {
    const a = await session();
    await a.declareQueryable("err/k", {
      handler: async (q: Query) => {
        await q.replyErr("boom");
        await q.finalize();
      },
    });
    await a.declareQueryable("del/k", {
      handler: async (q: Query) => {
        await q.replyDel("del/k");
        await q.finalize();
      },
    });
    expect((await replies(await a.get("err/k"))).map(okText)).toEqual(["ERR boom"]);
    const del = await replies(await a.get("del/k"));
    const sample = del[0]?.result() as Sample;
    expect(sample.kind()).toBe(SampleKind.DELETE);
  });

  it("finalizes at once when nothing matches, and on timeout when a queryable never finalizes", async () => {
    const a = await session();
    expect(await replies(await a.get("nobody/here"))).toEqual([]);
    await a.declareQueryable("slow/k", { handler: () => {} });
    expect(
      await replies(await a.get("slow/k", { timeout: Duration.milliseconds.of(300) })),
    ).toEqual([]);
    expect(router.stats().pendingQueries).toBe(0);
  });

  it("consolidates: NONE passes every reply, the default keeps one per key", async () => {
    const a = await session();
    const b = await session();
    for (const s of [a, b])
      await s.declareQueryable("multi/k", {
        handler: async (q: Query) => {
          await q.reply("multi/k", "v");
          await q.finalize();
        },
      });
    expect(
      await replies(await a.get("multi/k", { consolidation: ConsolidationMode.NONE })),
    ).toHaveLength(2);
    expect(await replies(await a.get("multi/k"))).toHaveLength(1);
  });

  it("finishes a get whose queryable's session goes away", async () => {
    const a = await session();
    const b = await session();
    await b.declareQueryable("gone/k", { handler: () => void b.close() });
    expect(await replies(await a.get("gone/k"))).toEqual([]);
  });
});

describe("liveliness", () => {
  it("announces tokens to liveliness subscribers, replays history, answers gets, and drops tokens of closed sessions", async () => {
    const a = await session();
    const b = await session();
    const events = collector<Sample>();
    await a.liveliness().declareSubscriber("alive/**", { handler: (s: Sample) => events.push(s) });
    const token = await b.liveliness().declareToken("alive/b");
    const c = await session();
    await c.liveliness().declareToken("alive/c");
    await events.until(2);
    const history = collector<Sample>();
    await a.liveliness().declareSubscriber("alive/*", {
      history: true,
      handler: (s: Sample) => history.push(s),
    });
    expect((await history.until(2)).map((s) => s.keyexpr().toString()).sort()).toEqual([
      "alive/b",
      "alive/c",
    ]);
    const live = await replies(await a.liveliness().get("alive/**"));
    expect(live.map((r) => (r.result() as Sample).keyexpr().toString()).sort()).toEqual([
      "alive/b",
      "alive/c",
    ]);
    await token.undeclare();
    await c.close();
    const all = await events.until(4);
    expect(all.map((s) => [s.keyexpr().toString(), s.kind()])).toEqual([
      ["alive/b", SampleKind.PUT],
      ["alive/c", SampleKind.PUT],
      ["alive/b", SampleKind.DELETE],
      ["alive/c", SampleKind.DELETE],
    ]);
  });
});

describe("session", () => {
  it("answers session info and timestamps", async () => {
    const a = await session();
    const info = await a.info();
    expect(info.routersZid()).toHaveLength(1);
    const ts = await a.newTimestamp();
    expect(Math.abs(ts.asDate().getTime() - Date.now())).toBeLessThan(60_000);
  });

  it("answers malformed requests with an error and keeps serving", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${router.port}`);
    await new Promise((resolve) => ws.once("open", resolve));
    const answer = new Promise<Buffer>((resolve) =>
      ws.once("message", (d) => resolve(d as Buffer)),
    );
    // DeclareSubscriber (2) as a request with seq 7, then a truncated body.
    ws.send(Buffer.from([2 | 0x80, 7, 0, 0, 0, 1, 0]));
    const reply = await answer;
    expect(reply[0]).toBe(2 | 0x80); // Error
    expect(reply.readUInt32LE(1)).toBe(7);
    expect(reply.subarray(6).toString()).toMatch(/truncated/);
    ws.send(Buffer.from([0x7f])); // unknown id, fire-and-forget: ignored
    ws.close();
    const a = await session();
    expect((await a.info()).routersZid()).toHaveLength(1);
    expect(router.stats().malformedMessages).toBeGreaterThanOrEqual(2);
  });
});

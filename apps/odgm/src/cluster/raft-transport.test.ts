// The Raft transport over real HTTP/2 on loopback: batching across groups on one long-lived
// stream, malformed envelopes refused without failing the batch, an unreachable or stalled
// peer reported and retried, and the streams a stopping node ends. Every case runs against
// both servers a node may answer with: the gRPC fast path (the default) and connect-node.
import { createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  type RaftBatch,
  RaftBatchSchema,
  RaftEnvelopeSchema,
  RaftMessageSchema,
  type RaftMessageType,
  RaftService,
} from "@oprc/grpc-api";
import { createMessage, type Message } from "@oprc/raft-log";
import { until as waitUntil } from "@oprc/test-config/until";
import { afterEach, describe, expect, it } from "vitest";
import { createGrpcUnaryFastPath } from "../server/grpc-unary-fast-path.js";
import {
  createRaftServiceImpl,
  createRaftTransport,
  type RaftTransport,
} from "./raft-transport.js";

const servers: Http2Server[] = [];
const transports: RaftTransport[] = [];
afterEach(async () => {
  for (const t of transports.splice(0)) t.close();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

interface Received {
  group: string;
  m: Message;
  /** The envelope's quiescence mark. */
  quiesce: boolean;
}

type ServerKind = "fast path" | "connect";

async function nodeOf(
  id: number,
  options: {
    stall?: boolean;
    stop?: AbortSignal;
    server?: ServerKind;
    admit?: (from: number, incarnations: { from: number; to: number }) => boolean;
  } = {},
): Promise<{
  url: string;
  got: Received[];
  rejected: unknown[];
  calls: number[];
  streams: number;
  /** Batches admitted (the `heard` hook), by sender. */
  heard: number[];
}> {
  const got: Received[] = [];
  const rejected: unknown[] = [];
  const calls: number[] = [];
  const heard: number[] = [];
  const impl = createRaftServiceImpl({
    nodeId: id,
    deliver: (group, m, quiesce) => {
      got.push({ group, m, quiesce });
      return group !== "unknown";
    },
    heard: (from) => heard.push(from),
    onRejected: (err) => rejected.push(err),
    ...(options.stop === undefined ? {} : { stop: options.stop }),
    ...(options.admit === undefined ? {} : { admit: options.admit }),
  });
  const out = { url: "", got, rejected, calls, streams: 0, heard };
  const raft = {
    stream(requests: AsyncIterable<RaftBatch>) {
      out.streams++;
      // A stalled peer never reads what it is sent.
      if (options.stall === true) return new Promise<never>(() => undefined);
      return impl.stream(
        (async function* () {
          for await (const req of requests) {
            calls.push(req.messages.length);
            yield req;
          }
        })(),
      );
    },
  };
  let server: Http2Server;
  if (options.server === "connect") {
    server = createServer(
      connectNodeAdapter({ routes: (r) => r.service(RaftService, raft as never) }),
    );
  } else {
    const fast = createGrpcUnaryFastPath({
      services: [{ service: RaftService, impl: raft, streams: true }],
      readMaxBytes: 4 << 20,
      writeMaxBytes: 4 << 20,
      interceptors: [],
    });
    server = createServer();
    server.on("stream", (stream, headers) => {
      if (fast(stream, headers)) return;
      stream.respond({ ":status": 404 });
      stream.end();
    });
  }
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  out.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return out;
}

/** The bound this suite's waits have always had. */
const until = (cond: () => boolean): Promise<void> => waitUntil(cond, 4000);

describe.each<ServerKind>(["fast path", "connect"])("raft transport, %s server", (server) => {
  const node = (id: number, options: Omit<Parameters<typeof nodeOf>[1], "server"> = {}) =>
    nodeOf(id, { ...options, server });

  it("batches the messages of every group bound for a peer, on one stream", async () => {
    const peer = await node(2);
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: (p) => (p === 2 ? peer.url : undefined),
    });
    transports.push(t);
    for (let g = 0; g < 5; g++) {
      t.send(`c/${g}`, [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    }
    await until(() => peer.got.length === 5);
    expect(peer.calls).toEqual([5]);
    expect(peer.got.map((r) => r.group)).toEqual(["c/0", "c/1", "c/2", "c/3", "c/4"]);
    // Later batches go on the same stream.
    t.send("c/0", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => peer.got.length === 6);
    expect(peer.streams).toBe(1);
    expect(t.stats()[0]).toMatchObject({ batches: 2, messages: 6, streams: 1, failures: 0 });
    // Local message types never leave the node.
    t.send("c/0", [createMessage({ type: "hup", from: 1, to: 2 })]);
    expect(t.stats()[0]?.queued).toBe(0);
  });

  it("carries the quiescence mark; keepAlive writes an empty batch to a peer only when nothing else went", async () => {
    const peer = await node(2);
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: (p) => (p === 2 ? peer.url : undefined),
    });
    transports.push(t);
    const heartbeat = () => createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 });
    t.send("a", [heartbeat()], true);
    t.send("b", [heartbeat()]);
    await until(() => peer.got.length === 2);
    expect(peer.got.map((r) => [r.group, r.quiesce])).toEqual([
      ["a", true],
      ["b", false],
    ]);
    expect(peer.heard).toEqual([1]);
    t.keepAlive([1, 2]); // a batch went since the last call (none): nothing more
    await new Promise((r) => setTimeout(r, 50));
    expect(peer.calls).toEqual([2]);
    t.keepAlive([1, 2]); // nothing since the last call: an empty batch (never to itself)
    await until(() => peer.calls.length === 2);
    expect(peer.calls).toEqual([2, 0]);
    expect(peer.heard).toEqual([1, 1]);
    expect(peer.got).toHaveLength(2);
    expect(t.stats()[0]).toMatchObject({ messages: 2, dropped: 0 });
  });

  it("sends both nodes' incarnations with every batch; a batch the receiver refuses is dropped whole", async () => {
    const seen: { from: number; to: number }[] = [];
    let admitted = false;
    const peer = await node(2, {
      admit: (from: number, incarnations: { from: number; to: number }) => {
        expect(from).toBe(1);
        seen.push(incarnations);
        return admitted;
      },
    });
    let known: number | undefined;
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: () => peer.url,
      incarnation: 2 ** 40 + 7,
      incarnationOf: (p) => (p === 2 ? known : undefined),
    });
    transports.push(t);
    const heartbeat = () => createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 });
    t.send("g", [heartbeat(), heartbeat()]);
    await until(() => seen.length === 1);
    expect(seen[0]).toEqual({ from: 2 ** 40 + 7, to: 0 });
    expect(peer.got).toHaveLength(0);
    admitted = true;
    known = 99;
    t.send("g", [heartbeat()]);
    await until(() => peer.got.length === 1);
    expect(seen[1]).toEqual({ from: 2 ** 40 + 7, to: 99 });
  });

  it("drops a malformed message of a batch, delivers the rest, and refuses batches for another node", async () => {
    const peer = await node(2);
    const impl = createRaftServiceImpl({
      nodeId: 2,
      deliver: (g, m, quiesce) => peer.got.push({ group: g, m, quiesce }) > 0,
      onRejected: (e) => peer.rejected.push(e),
    });
    const ok = create(RaftEnvelopeSchema, {
      group: "g",
      message: create(RaftMessageSchema, { type: 10, from: 1n, to: 2n, term: 1n }),
    });
    const bad = create(RaftEnvelopeSchema, {
      group: "g",
      message: create(RaftMessageSchema, { type: 42 as RaftMessageType, from: 1n, to: 2n }),
    });
    const forged = create(RaftEnvelopeSchema, {
      group: "g",
      message: create(RaftMessageSchema, { type: 10, from: 3n, to: 2n, term: 1n }),
    });
    impl.receive(
      create(RaftBatchSchema, { fromNode: 1n, toNode: 2n, messages: [bad, ok, forged] }),
    );
    expect(peer.got).toHaveLength(1);
    expect(peer.rejected).toHaveLength(2);
    expect(() =>
      impl.receive(create(RaftBatchSchema, { fromNode: 1n, toNode: 9n, messages: [ok] })),
    ).toThrow(/not node 9/);
  });

  it("reports an unreachable peer, backs off, and delivers once it is up", async () => {
    const unreachable: number[] = [];
    let url: string | undefined = "http://127.0.0.1:1";
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: () => url,
      onUnreachable: (p) => unreachable.push(p),
      callTimeoutMs: 1000,
    });
    transports.push(t);
    t.send("g", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => unreachable.length > 0);
    expect(t.stats()[0]?.failures).toBeGreaterThan(0);
    const peer = await node(2);
    url = peer.url;
    for (let i = 0; i < 100 && peer.got.length === 0; i++) {
      t.send("g", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(peer.got.length).toBeGreaterThan(0);
  });

  it("fails a stream whose peer stops reading, reports the groups it carried, and reopens", async () => {
    const stalled = await node(2, { stall: true });
    const unreachable: string[][] = [];
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: () => stalled.url,
      onUnreachable: (_p, groups) => unreachable.push([...groups]),
      callTimeoutMs: 300,
    });
    transports.push(t);
    // Large messages fill the HTTP/2 flow-control window of a peer that never reads.
    const big = new Uint8Array(256 * 1024);
    for (let i = 0; i < 40 && unreachable.length === 0; i++) {
      t.send(`g/${i % 3}`, [
        createMessage({ type: "heartbeat", from: 1, to: 2, term: 1, context: big }),
      ]);
      await new Promise((r) => setTimeout(r, 20));
    }
    await until(() => unreachable.length > 0);
    expect(unreachable[0]).toEqual(expect.arrayContaining(["g/0"]));
    expect(t.stats()[0]?.failures).toBeGreaterThan(0);
    // After the backoff the transport opens a new stream (on a new connection).
    t.send("g/0", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => stalled.streams > 1);
  });

  it("ends the streams peers keep open when the node stops; the peer counts it unreachable", async () => {
    const stopping = new AbortController();
    const peer = await node(2, { stop: stopping.signal });
    const unreachable: string[][] = [];
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: (p) => (p === 2 ? peer.url : undefined),
      onUnreachable: (_, groups) => unreachable.push([...groups]),
    });
    transports.push(t);
    t.send("c/0", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => peer.got.length === 1);
    expect(t.stats()[0]).toMatchObject({ connected: true, failures: 0 });
    stopping.abort();
    await until(() => (t.stats()[0]?.failures ?? 0) >= 1);
    expect(t.stats()[0]?.connected).toBe(false);
    expect(unreachable[0]).toEqual(["c/0"]);
    // A stream opened after the stop ends at once too: nothing more is delivered.
    t.send("c/0", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => (t.stats()[0]?.failures ?? 0) >= 2);
    expect(peer.got.length).toBe(1);
  });

  it("a peer that refuses the stream ends it with its status; the sender reports that error", async () => {
    // Node 3 answers on the address the sender has for node 2.
    const wrong = await node(3);
    const errors: unknown[] = [];
    const t = createRaftTransport({
      nodeId: 1,
      addressOf: () => wrong.url,
      onError: (err) => errors.push(err),
    });
    transports.push(t);
    t.send("g", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => errors.length > 0);
    expect(String(errors[0])).toMatch(/this is node 3, not node 2/);
    expect(wrong.got).toHaveLength(0);
    expect(t.stats()[0]?.connected).toBe(false);
  });

  it("follows a peer to its new address, ending the old stream without counting a failure", async () => {
    const before = await node(2);
    const after = await node(2);
    let url = before.url;
    const t = createRaftTransport({ nodeId: 1, addressOf: () => url });
    transports.push(t);
    t.send("g", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 1 })]);
    await until(() => before.got.length === 1);
    url = after.url;
    t.send("g", [createMessage({ type: "heartbeat", from: 1, to: 2, term: 2 })]);
    await until(() => after.got.length === 1);
    expect(after.got[0]?.m.term).toBe(2);
    expect(before.got).toHaveLength(1);
    expect(t.stats()[0]).toMatchObject({ failures: 0, streams: 2, connected: true });
  });
});

// The Raft transport over real HTTP/2 on loopback: batching across groups, malformed
// envelopes refused without failing the batch, an unreachable peer reported and retried.
import { createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  RaftEnvelopeSchema,
  RaftMessageSchema,
  type RaftMessageType,
  RaftService,
} from "@oprc/grpc-api";
import { createMessage, type Message } from "@oprc/raft-log";
import { afterEach, describe, expect, it } from "vitest";
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
}

async function node(
  id: number,
): Promise<{ url: string; got: Received[]; rejected: unknown[]; calls: number[] }> {
  const got: Received[] = [];
  const rejected: unknown[] = [];
  const calls: number[] = [];
  const impl = createRaftServiceImpl({
    nodeId: id,
    deliver: (group, m) => {
      got.push({ group, m });
      return group !== "unknown";
    },
    onRejected: (err) => rejected.push(err),
  });
  const handler = connectNodeAdapter({
    routes: (r) =>
      r.service(RaftService, {
        send(req) {
          calls.push(req.messages.length);
          return impl.send(req);
        },
      }),
  });
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    got,
    rejected,
    calls,
  };
}

const until = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
};

describe("raft transport", () => {
  it("batches the messages of every group bound for a peer into one call", async () => {
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
    // Local message types never leave the node.
    t.send("c/0", [createMessage({ type: "hup", from: 1, to: 2 })]);
    expect(t.stats()[0]?.queued).toBe(0);
  });

  it("drops a malformed message of a batch, delivers the rest, and refuses batches for another node", async () => {
    const peer = await node(2);
    const impl = createRaftServiceImpl({
      nodeId: 2,
      deliver: (g, m) => peer.got.push({ group: g, m }) > 0,
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
    impl.send({
      $typeName: "oprc.RaftBatch",
      fromNode: 1n,
      toNode: 2n,
      messages: [bad, ok, forged],
    });
    expect(peer.got).toHaveLength(1);
    expect(peer.rejected).toHaveLength(2);
    expect(() =>
      impl.send({ $typeName: "oprc.RaftBatch", fromNode: 1n, toNode: 9n, messages: [ok] }),
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
});

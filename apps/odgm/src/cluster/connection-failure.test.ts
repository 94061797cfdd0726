// Over real HTTP/2 on loopback: a peer's ABORTED answer and a connection reset (which
// Connect also reports as ABORTED) are told apart.
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { RaftService } from "@oprc/grpc-api";
import { afterEach, describe, expect, it } from "vitest";
import { isConnectionFailure, isConnectionRefused } from "./connection-failure.js";

const servers: Http2Server[] = [];
const sessions = new Set<ServerHttp2Session>();
afterEach(async () => {
  for (const s of sessions) s.destroy();
  sessions.clear();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A RaftService whose ProposeBatch answers ABORTED, or resets the TCP connection mid-call. */
async function peer(behaviour: "abort" | "reset"): Promise<string> {
  const handler = connectNodeAdapter({
    routes: (r) =>
      r.service(RaftService, {
        proposeBatch() {
          throw new ConnectError(
            "[version_mismatch] expected object version 1, actual 2",
            Code.Aborted,
          );
        },
      }),
  });
  const server = createServer((req, res) => {
    if (behaviour === "reset") {
      req.stream.session?.socket.resetAndDestroy();
      return;
    }
    void handler(req, res);
  });
  server.on("session", (s) => sessions.add(s));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function proposeError(url: string): Promise<ConnectError> {
  const client = createClient(RaftService, createGrpcTransport({ baseUrl: url }));
  try {
    await client.proposeBatch(
      { proposals: [{ group: "kv/0", command: new Uint8Array([1]) }] },
      { timeoutMs: 5000 },
    );
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded");
}

describe("isConnectionFailure, isConnectionRefused", () => {
  it("a peer's ABORTED answer is not a connection failure", async () => {
    const ce = await proposeError(await peer("abort"));
    expect(ce.code).toBe(Code.Aborted);
    expect(isConnectionFailure(ce)).toBe(false);
    expect(isConnectionRefused(ce)).toBe(false);
  });

  it("a reset connection is, although Connect reports it as ABORTED too", async () => {
    const ce = await proposeError(await peer("reset"));
    expect(ce.code).toBe(Code.Aborted);
    expect(ce.rawMessage).toMatch(/ECONNRESET/);
    expect(isConnectionFailure(ce)).toBe(true);
    // It may have carried the call: not a refusal.
    expect(isConnectionRefused(ce)).toBe(false);
  });

  it("a refused connection is", async () => {
    const url = await peer("abort");
    for (const s of sessions) s.destroy();
    await new Promise((r) => (servers.pop() as Http2Server).close(r));
    const ce = await proposeError(url);
    expect(isConnectionFailure(ce)).toBe(true);
    expect(isConnectionRefused(ce)).toBe(true);
  });
});

// The Raft transport's HTTP/2 call against real servers on loopback: Node's (nghttp2, over
// cleartext and mutual TLS) and odgm's own lean engine; flow control against a peer that
// reads slowly, every way a call can end (trailers, an HTTP status, a reset, GOAWAY, a peer
// gone silent, protocol garbage, a lost connection), and a close from this side.
import { readFileSync } from "node:fs";
import {
  constants,
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type ServerHttp2Stream,
} from "node:http2";
import net, { type AddressInfo } from "node:net";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { Code, ConnectError } from "@connectrpc/connect";
import { until } from "@oprc/test-config/until";
import { afterEach, describe, expect, it } from "vitest";
import { H2cConnection } from "../server/h2c/h2c-connection.js";
import { H2StreamingCall } from "./h2-streaming-call.js";

const PATH = "/test.Service/Stream";
const HEADERS = ["content-type", "application/grpc+proto", "te", "trailers"];
const PING = { pingIntervalMs: 60_000, pingTimeoutMs: 60_000 };

const closers: (() => Promise<void>)[] = [];
const calls: H2StreamingCall[] = [];
afterEach(async () => {
  for (const c of calls.splice(0)) c.close();
  for (const close of closers.splice(0)) await close();
});

/** Listens on loopback; after the test, its connections are destroyed and it is closed. */
async function listen(server: net.Server | Http2Server | Http2SecureServer): Promise<number> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket): void => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  };
  server.on("connection", track);
  server.on("secureConnection", track);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        (server as net.Server).close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A Node HTTP/2 server that hands each stream of PATH to `onStream`. */
async function nodeServer(onStream: (s: ServerHttp2Stream) => void, windowSize?: number) {
  const server = createServer(
    windowSize === undefined ? {} : { settings: { initialWindowSize: windowSize } },
  );
  server.on("stream", (stream, headers) => {
    if (headers[":path"] !== PATH) {
      stream.respond({ ":status": 404 });
      stream.end();
      return;
    }
    onStream(stream);
  });
  return `http://127.0.0.1:${await listen(server)}`;
}

async function open(url: string, extra: object = {}): Promise<H2StreamingCall> {
  const call = await H2StreamingCall.open({ url, path: PATH, headers: HEADERS, ...PING, ...extra });
  calls.push(call);
  return call;
}

function write(call: H2StreamingCall, data: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) =>
    call.write(data, (err) => (err ? reject(err) : resolve())),
  );
}

function ended(call: H2StreamingCall): Promise<ConnectError> {
  return new Promise((resolve) => call.whenEnded(resolve));
}

function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

describe("H2StreamingCall", () => {
  it("delivers every write, in order, to Node's HTTP/2 server, past the default windows", async () => {
    const got: Buffer[] = [];
    const url = await nodeServer((s) => s.on("data", (c: Buffer) => got.push(c)));
    const call = await open(url);
    // 300 KB in all: several times the 64 KB windows a peer starts with, and frames of 16 KB.
    const sent = [bytes(10, 1), bytes(200_000, 2), bytes(3, 3), bytes(100_000, 4)];
    for (const b of sent) await write(call, b);
    const total = sent.reduce((n, b) => n + b.length, 0);
    await until(() => got.reduce((n, b) => n + b.length, 0) === total);
    expect(Buffer.concat(got).equals(Buffer.concat(sent))).toBe(true);
    expect(call.closed).toBe(false);
  });

  it("delivers to odgm's lean engine too", async () => {
    const got: Buffer[] = [];
    const server = net.createServer((socket) => {
      new H2cConnection(socket, {
        onStream: (stream, headers) => {
          expect(headers[":path"]).toBe(PATH);
          expect(headers["content-type"]).toBe("application/grpc+proto");
          stream.on("data", (c: Buffer) => got.push(c));
        },
        maxConcurrentStreams: 10,
        idleTimeoutMs: 60_000,
        pingTimeoutMs: 60_000,
      });
    });
    const call = await open(`http://127.0.0.1:${await listen(server)}`);
    const sent = [bytes(5, 1), bytes(1_500_000, 2), bytes(7, 3)];
    for (const b of sent) await write(call, b);
    await until(() => got.reduce((n, b) => n + b.length, 0) === 1_500_012);
    expect(Buffer.concat(got).equals(Buffer.concat(sent))).toBe(true);
  });

  it("waits for the peer's windows: a write completes only once a slow reader took it", async () => {
    let stream: ServerHttp2Stream | undefined;
    const got: Buffer[] = [];
    const url = await nodeServer((s) => {
      stream = s;
      s.pause();
      s.on("data", (c: Buffer) => got.push(c));
    }, 1024);
    const call = await open(url);
    // Until the peer's SETTINGS arrive its windows are the default 64 KB; after them, 1 KB.
    const first = bytes(10, 8);
    await write(call, first);
    await until(() => stream !== undefined);
    await new Promise((r) => setTimeout(r, 50));
    let done = false;
    const big = bytes(40_000, 9);
    const wrote = write(call, big).then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    // Held back by the 1 KB stream window the peer granted and does not reopen while paused.
    expect(done).toBe(false);
    stream?.resume();
    await wrote;
    await until(() => got.reduce((n, b) => n + b.length, 0) === 10 + big.length);
    expect(Buffer.concat(got).equals(Buffer.concat([first, big]))).toBe(true);
  });

  it("ends with the error status of the peer's trailers", async () => {
    const url = await nodeServer((s) => {
      s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      s.on("wantTrailers", () =>
        s.sendTrailers({ "grpc-status": "9", "grpc-message": "this is node 3, not node 2" }),
      );
      s.end();
    });
    const err = await ended(await open(url));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("this is node 3, not node 2");
  });

  it("ends on a status other than 200, a reset, and GOAWAY", async () => {
    const notFound = await ended(
      await H2StreamingCall.open({
        url: await nodeServer(() => undefined),
        path: "/elsewhere",
        headers: HEADERS,
        ...PING,
      }),
    );
    expect(notFound.code).toBe(Code.Unavailable);
    expect(notFound.rawMessage).toBe("HTTP status 404");

    const reset = await ended(
      await open(await nodeServer((s) => s.close(constants.NGHTTP2_CANCEL))),
    );
    expect(reset.rawMessage).toMatch(/the peer ended the call \(reset 8\)/);

    const away = await ended(
      await open(await nodeServer((s) => s.session?.goaway(constants.NGHTTP2_INTERNAL_ERROR))),
    );
    // An error, not a drain: the call ends at once.
    expect(away.rawMessage).toMatch(/going away \(GOAWAY 2\)/);
  });

  it("goes on after a graceful GOAWAY that counts its stream in, until the connection closes", async () => {
    const got: Buffer[] = [];
    let stream: ServerHttp2Stream | undefined;
    const url = await nodeServer((s) => {
      stream = s;
      s.on("data", (c: Buffer) => got.push(c));
    });
    const call = await open(url);
    await write(call, bytes(10, 1));
    await until(() => stream !== undefined);
    // What a draining server says: no new streams, but stream 1 may finish.
    stream?.session?.goaway(constants.NGHTTP2_NO_ERROR, 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(call.closed).toBe(false);
    await write(call, bytes(20, 2));
    await until(() => got.reduce((n, b) => n + b.length, 0) === 30);
    const end = ended(call);
    stream?.session?.destroy();
    expect((await end).code).toBe(Code.Unavailable);
  });

  it("pings the peer: answered, the call stays; a silent peer ends it", async () => {
    // A ping every 20 ms, one at a time: the next goes only once the last was answered
    // (2 s allowed each: slack for a loaded machine).
    let pings = 0;
    const answering = await open(await nodeServer((s) => s.session?.on("ping", () => pings++)), {
      pingIntervalMs: 20,
      pingTimeoutMs: 2000,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(answering.closed).toBe(false);
    expect(pings).toBeGreaterThanOrEqual(3);

    // Accepts the connection and never says a word.
    const silent = net.createServer(() => undefined);
    const started = Date.now();
    const err = await ended(
      await open(`http://127.0.0.1:${await listen(silent)}`, {
        pingIntervalMs: 20,
        pingTimeoutMs: 100,
      }),
    );
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toMatch(/did not answer a ping in 100 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("ends on protocol garbage and on a lost connection, and never throws", async () => {
    const garbage = net.createServer((s) => s.write(Buffer.alloc(32, 0xff)));
    const err = await ended(await open(`http://127.0.0.1:${await listen(garbage)}`));
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toMatch(/broke HTTP\/2/);

    const hangUp = net.createServer((s) => setTimeout(() => s.destroy(), 20));
    const call = await open(`http://127.0.0.1:${await listen(hangUp)}`);
    const lost = await ended(call);
    expect(lost.rawMessage).toMatch(/closed/);
    // A write after the end fails with that error; it does not throw.
    await expect(write(call, bytes(10, 1))).rejects.toThrow(/closed/);
  });

  it("close() resets the stream and reports nothing", async () => {
    let code: number | undefined;
    const url = await nodeServer((s) => s.on("close", () => (code = s.rstCode)));
    const call = await open(url);
    await write(call, bytes(10, 1));
    let reported = false;
    call.whenEnded(() => {
      reported = true;
    });
    call.close();
    await until(() => code !== undefined);
    expect(code).toBe(constants.NGHTTP2_CANCEL);
    await new Promise((r) => setTimeout(r, 50));
    expect(reported).toBe(false);
    expect(call.closed).toBe(true);
  });

  it("close() frees the connection of a peer that stopped reading", async () => {
    // Never reads: it sees neither the reset nor the end of the connection.
    const deaf = net.createServer((s) => s.pause());
    const port = await listen(deaf);
    const sockets = () =>
      process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length;
    const before = sockets();
    const call = await open(`http://127.0.0.1:${port}`);
    await until(() => sockets() === before + 2);
    call.close();
    // Ours goes within the grace; the server's own stays until the test ends it.
    await until(() => sockets() === before + 1);
  });

  it("refuses a peer that cannot be reached (UNAVAILABLE)", async () => {
    const spare = net.createServer();
    await new Promise<void>((r) => spare.listen(0, "127.0.0.1", r));
    const port = (spare.address() as AddressInfo).port;
    await new Promise<void>((r) => spare.close(() => r()));
    const err = await H2StreamingCall.open({
      url: `http://127.0.0.1:${port}`,
      path: PATH,
      headers: HEADERS,
      ...PING,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });

  it("gives up connecting after connectTimeoutMs (a peer that never finishes the handshake)", async () => {
    // A TLS client waits for the server's handshake, which this server never sends.
    const mute = net.createServer(() => undefined);
    const port = await listen(mute);
    const started = Date.now();
    const err = await H2StreamingCall.open({
      url: `https://127.0.0.1:${port}`,
      path: PATH,
      headers: HEADERS,
      ...PING,
      connectTimeoutMs: 100,
    }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).rawMessage).toMatch(/no connection within 100 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("speaks HTTP/2 over mutual TLS: the peer sees the client's certificate", async () => {
    const dir = join(import.meta.dirname, "..", "..", "test", "fixtures", "tls");
    const pem = (name: string) => readFileSync(join(dir, name));
    const tls = { cert: pem("node.pem"), key: pem("node-key.pem"), ca: pem("ca.pem") };
    const got: Buffer[] = [];
    let authorized: boolean | undefined;
    const server = createSecureServer({ ...tls, requestCert: true, rejectUnauthorized: true });
    server.on("stream", (stream) => {
      authorized = (stream.session?.socket as TLSSocket | undefined)?.authorized;
      stream.on("data", (c: Buffer) => got.push(c));
    });
    const port = await listen(server);
    const call = await open(`https://127.0.0.1:${port}`, { tls });
    await write(call, bytes(70_000, 5));
    await until(() => got.reduce((n, b) => n + b.length, 0) === 70_000);
    expect(authorized).toBe(true);

    // Without a certificate the CA signed, the connection is refused.
    const rogue = { cert: pem("rogue.pem"), key: pem("rogue-key.pem"), ca: pem("ca.pem") };
    const refused = await H2StreamingCall.open({
      url: `https://127.0.0.1:${port}`,
      path: PATH,
      headers: HEADERS,
      ...PING,
      tls: rogue,
    }).then(
      (c) => ended(c),
      (e: unknown) => e as ConnectError,
    );
    expect(refused.code).toBe(Code.Unavailable);
  });
});

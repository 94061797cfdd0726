import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  ErrorCode,
  Flag,
  FrameType,
  frame,
  CLIENT_PREFACE as PREFACE,
  settingsFrame,
} from "./h2-frames.js";
import { H2cConnection, type H2cConnectionOptions, requestHeaders } from "./h2c-connection.js";
import { HpackEncoder } from "./hpack.js";

type OnStream = H2cConnectionOptions["onStream"];

const servers: net.Server[] = [];
const clients: ClientHttp2Session[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await Promise.all(
    servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
  );
});

interface Served {
  readonly port: number;
  readonly connections: H2cConnection[];
  readonly errors: Error[];
}

async function serve(
  onStream: OnStream,
  extra: Partial<H2cConnectionOptions> = {},
): Promise<Served> {
  const connections: H2cConnection[] = [];
  const errors: Error[] = [];
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    connections.push(
      new H2cConnection(socket, {
        onStream,
        maxConcurrentStreams: 100,
        idleTimeoutMs: 60_000,
        pingTimeoutMs: 10_000,
        onError: (err) => errors.push(err),
        ...extra,
      }),
    );
  });
  const close = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    for (const s of sockets) s.destroy();
    return close(cb);
  }) as typeof server.close;
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, connections, errors };
}

function connect(port: number, options: http2.ClientSessionOptions = {}): ClientHttp2Session {
  const c = http2.connect(`http://127.0.0.1:${port}`, options);
  c.on("error", () => {});
  clients.push(c);
  return c;
}

interface Answer {
  headers: IncomingHttpHeaders;
  body: Buffer;
  trailers: IncomingHttpHeaders | undefined;
  rstCode: number | undefined;
}

/** Sends one request and collects the whole answer. */
function call(
  c: ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<Answer> {
  return new Promise((resolve) => {
    const req = c.request({ ":method": "POST", ":path": "/x", ...headers });
    const chunks: Buffer[] = [];
    let h: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    req.on("response", (r) => {
      h = r;
    });
    req.on("trailers", (t) => {
      trailers = t;
    });
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", () => {});
    req.on("close", () =>
      resolve({ headers: h, body: Buffer.concat(chunks), trailers, rstCode: req.rstCode }),
    );
    req.end(body);
  });
}

/** A handler that answers every request with its body, and a trailer counting its bytes. */
const echo: OnStream = (stream) => {
  const chunks: Buffer[] = [];
  stream.on("data", (d: Buffer) => chunks.push(d));
  stream.on("end", () => {
    const body = Buffer.concat(chunks);
    stream.respond([":status", "200", "content-type", "application/octet-stream"], {
      waitForTrailers: true,
    });
    stream.once("wantTrailers", () => stream.sendTrailers({ "x-bytes": String(body.length) }));
    stream.end(body);
  });
};

describe("H2cConnection against Node's HTTP/2 client", () => {
  it("answers a request with headers, body and trailers", async () => {
    const { port } = await serve(echo);
    const a = await call(connect(port), { "x-hello": "world" }, Buffer.from("ping"));
    expect(a.headers[":status"]).toBe(200);
    expect(a.headers["content-type"]).toBe("application/octet-stream");
    expect(a.body.toString()).toBe("ping");
    expect(a.trailers?.["x-bytes"]).toBe("4");
  });

  it("passes the request headers as Node's header object", async () => {
    let seen: IncomingHttpHeaders | undefined;
    const { port } = await serve((stream, headers) => {
      seen = headers;
      echo(stream, headers, []);
    });
    await call(connect(port), { "x-a": "1", cookie: ["a=1", "b=2"] });
    expect(seen?.[":method"]).toBe("POST");
    expect(seen?.[":path"]).toBe("/x");
    expect(seen?.["x-a"]).toBe("1");
    expect(seen?.cookie).toBe("a=1; b=2");
  });

  it("moves bodies larger than every window both ways, intact", async () => {
    const { port } = await serve(echo);
    // The client's stream window is Node's default 65,535 bytes; ours is 1 MiB.
    const body = Buffer.alloc(5 * 1024 * 1024 + 17);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    const a = await call(connect(port), {}, body);
    expect(a.body.equals(body)).toBe(true);
    expect(a.trailers?.["x-bytes"]).toBe(String(body.length));
  });

  it("serves many streams of one connection at once", async () => {
    const { port } = await serve(echo);
    const c = connect(port);
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) => call(c, {}, Buffer.from(`call ${i}`))),
    );
    answers.forEach((a, i) => {
      expect(a.body.toString()).toBe(`call ${i}`);
    });
  });

  it("splits a large header block into CONTINUATION frames and reads it back", async () => {
    let seen: IncomingHttpHeaders | undefined;
    const { port } = await serve((stream, headers) => {
      seen = headers;
      echo(stream, headers, []);
    });
    const big = "v".repeat(40_000);
    const a = await call(connect(port, { settings: { maxHeaderListSize: 1 << 20 } }), {
      "x-big": big,
    });
    expect(a.headers[":status"]).toBe(200);
    expect(seen?.["x-big"]).toBe(big);
  });

  it("answers 431 to a header list over the limit, and the connection goes on", async () => {
    const { port } = await serve(echo, { maxHeaderListSize: 1024 });
    const c = connect(port, { settings: { maxHeaderListSize: 1 << 20 } });
    const a = await call(c, { "x-big": "v".repeat(2000) });
    expect(a.headers[":status"]).toBe(431);
    const b = await call(c, {}, Buffer.from("ok"));
    expect(b.body.toString()).toBe("ok");
  });

  it("tells a stream the client reset it", async () => {
    let closed: Promise<number | undefined> | undefined;
    const { port } = await serve((stream) => {
      closed = new Promise((resolve) => stream.once("close", () => resolve(stream.rstCode)));
    });
    const c = connect(port);
    const req = c.request({ ":method": "POST", ":path": "/x" });
    req.on("error", () => {});
    await new Promise((r) => setTimeout(r, 50));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await new Promise((r) => setTimeout(r, 50));
    expect(await closed).toBe(ErrorCode.CANCEL);
  });

  it("answers pings", async () => {
    const { port } = await serve(echo);
    const c = connect(port);
    await new Promise((resolve) => c.once("connect", resolve));
    await new Promise<void>((resolve, reject) =>
      c.ping((err) => (err === null ? resolve() : reject(err))),
    );
  });

  it("closes gracefully: the call in flight finishes, then the connection ends", async () => {
    let answer: (() => void) | undefined;
    const { port, connections } = await serve((stream) => {
      stream.resume();
      answer = () => {
        stream.respond([":status", "200"]);
        stream.end(Buffer.from("late"));
      };
    });
    const c = connect(port);
    const pending = call(c, {});
    await new Promise((r) => setTimeout(r, 50));
    const gone = new Promise<void>((resolve) => c.once("close", () => resolve()));
    connections[0]?.close();
    answer?.();
    expect((await pending).body.toString()).toBe("late");
    await gone;
  });

  it("a handler's early answer ends the stream while the request is still sending", async () => {
    const { port } = await serve((stream) => {
      stream.respond([":status", "200"], { endStream: true });
    });
    const c = connect(port);
    const a = await call(c, {}, Buffer.alloc(3 * 1024 * 1024));
    expect(a.headers[":status"]).toBe(200);
    const b = await call(c, {});
    expect(b.headers[":status"]).toBe(200);
  });

  it("ends a connection whose peer does not read what its streams hold (64 MiB)", async () => {
    const { port, errors } = await serve((stream) => {
      stream.respond([":status", "200"]);
      stream.end(Buffer.alloc(8 * 1024 * 1024));
    });
    // The client's windows are shut: nothing of the answers can be sent.
    const c = connect(port, { settings: { initialWindowSize: 0 } });
    const code = new Promise<number>((resolve) => c.once("goaway", (n: number) => resolve(n)));
    for (let i = 0; i < 10; i++)
      c.request({ ":method": "POST", ":path": "/x" })
        .on("error", () => {})
        .end();
    expect(await code).toBe(ErrorCode.ENHANCE_YOUR_CALM);
    expect(errors.some((e) => e.message.includes("does not read"))).toBe(true);
  });

  it("a handler that throws ends its connection, not the process", async () => {
    const { port, errors } = await serve(() => {
      throw new Error("a bug");
    });
    const c = connect(port);
    const a = await call(c, {});
    expect(a.headers[":status"]).toBeUndefined();
    expect(errors.map((e) => e.message)).toContain("a bug");
  });

  it("echoes bodies of any size and chunking (property)", async () => {
    const { port } = await serve(echo);
    const c = connect(port);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 40_000 }), { maxLength: 6 }),
        async (parts) => {
          const req = c.request({ ":method": "POST", ":path": "/x" });
          const chunks: Buffer[] = [];
          req.on("data", (d: Buffer) => chunks.push(d));
          const done = new Promise<void>((resolve) => req.on("close", () => resolve()));
          for (const p of parts) req.write(p);
          req.end();
          await done;
          expect(Buffer.concat(chunks).equals(Buffer.concat(parts))).toBe(true);
        },
      ),
      { numRuns: 25 },
    );
  });
});

/** A raw client: writes bytes, collects the frames the server sends. */
async function rawClient(port: number): Promise<{
  socket: Socket;
  frames: { type: number; flags: number; id: number; payload: Buffer }[];
  closed: Promise<void>;
}> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  const frames: { type: number; flags: number; id: number; payload: Buffer }[] = [];
  let buf = Buffer.alloc(0);
  socket.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const length = buf.readUIntBE(0, 3);
      if (buf.length < 9 + length) break;
      frames.push({
        type: buf[3] as number,
        flags: buf[4] as number,
        id: buf.readUInt32BE(5) & 0x7fffffff,
        payload: buf.subarray(9, 9 + length),
      });
      buf = buf.subarray(9 + length);
    }
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { socket, frames, closed };
}

const REQUEST_HEADERS = [":method", "POST", ":scheme", "http", ":path", "/x", ":authority", "a"];
const REQUEST = new HpackEncoder().encode(REQUEST_HEADERS);

/** Sends `bytes` and returns the GOAWAY's error code once the server hangs up. */
async function goawayAfter(port: number, bytes: Buffer): Promise<number | undefined> {
  const raw = await rawClient(port);
  raw.socket.write(bytes);
  await Promise.race([raw.closed, new Promise((r) => setTimeout(r, 3000))]);
  raw.socket.destroy();
  const goaway = raw.frames.find((f) => f.type === FrameType.GOAWAY);
  return goaway?.payload.readUInt32BE(4);
}

describe("H2cConnection refuses protocol errors", () => {
  const start = Buffer.concat([PREFACE, settingsFrame([])]);

  it("a first frame that is not SETTINGS", async () => {
    const { port, errors } = await serve(echo);
    const code = await goawayAfter(
      port,
      Buffer.concat([PREFACE, frame(FrameType.PING, 0, 0, Buffer.alloc(8))]),
    );
    expect(code).toBe(ErrorCode.PROTOCOL_ERROR);
    expect(errors.length).toBe(1);
  });

  it("a wrong preface", async () => {
    const { port } = await serve(echo);
    const raw = await rawClient(port);
    raw.socket.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    await raw.closed;
  });

  it("a frame larger than MAX_FRAME_SIZE", async () => {
    const { port } = await serve(echo);
    const big = frame(FrameType.DATA, 0, 1, Buffer.alloc(20_000));
    expect(await goawayAfter(port, Buffer.concat([start, big]))).toBe(ErrorCode.FRAME_SIZE_ERROR);
  });

  it("DATA on stream 0 and on an idle stream", async () => {
    const { port } = await serve(echo);
    const d0 = frame(FrameType.DATA, 0, 0, Buffer.from("x"));
    expect(await goawayAfter(port, Buffer.concat([start, d0]))).toBe(ErrorCode.PROTOCOL_ERROR);
    const d5 = frame(FrameType.DATA, 0, 5, Buffer.from("x"));
    expect(await goawayAfter(port, Buffer.concat([start, d5]))).toBe(ErrorCode.PROTOCOL_ERROR);
  });

  it("a header block interrupted by another frame", async () => {
    const { port } = await serve(echo);
    const h = frame(FrameType.HEADERS, 0, 1, REQUEST.subarray(0, 3));
    const ping = frame(FrameType.PING, 0, 0, Buffer.alloc(8));
    expect(await goawayAfter(port, Buffer.concat([start, h, ping]))).toBe(ErrorCode.PROTOCOL_ERROR);
  });

  it("a header block HPACK cannot decode", async () => {
    const { port } = await serve(echo);
    const bad = frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x80]));
    expect(await goawayAfter(port, Buffer.concat([start, bad]))).toBe(ErrorCode.COMPRESSION_ERROR);
  });

  it("a window that grows past 2^31 - 1", async () => {
    const { port } = await serve(echo);
    const w = Buffer.alloc(4);
    w.writeUInt32BE(0x7fffffff);
    const wu = frame(FrameType.WINDOW_UPDATE, 0, 0, w);
    expect(await goawayAfter(port, Buffer.concat([start, wu]))).toBe(ErrorCode.FLOW_CONTROL_ERROR);
  });

  it("a malformed request is reset, and the connection goes on", async () => {
    let streams = 0;
    const { port } = await serve((stream, headers) => {
      streams++;
      echo(stream, headers, []);
    });
    const raw = await rawClient(port);
    const upper = new HpackEncoder().encode([...REQUEST_HEADERS, "X-Up", "1"]);
    raw.socket.write(
      Buffer.concat([
        start,
        frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, upper),
        frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 3, REQUEST),
      ]),
    );
    await new Promise((r) => setTimeout(r, 200));
    raw.socket.destroy();
    const rst = raw.frames.find((f) => f.type === FrameType.RST_STREAM && f.id === 1);
    expect(rst?.payload.readUInt32BE(0)).toBe(ErrorCode.PROTOCOL_ERROR);
    expect(raw.frames.some((f) => f.type === FrameType.HEADERS && f.id === 3)).toBe(true);
    expect(streams).toBe(1);
  });

  it("a PRIORITY frame of the wrong size resets an open stream, and is ignored on an idle one", async () => {
    const { port } = await serve(() => {});
    const raw = await rawClient(port);
    raw.socket.write(
      Buffer.concat([
        start,
        frame(FrameType.HEADERS, Flag.END_HEADERS, 1, REQUEST),
        frame(FrameType.PRIORITY, 0, 1, Buffer.alloc(4)),
        frame(FrameType.PRIORITY, 0, 7, Buffer.alloc(4)),
      ]),
    );
    await new Promise((r) => setTimeout(r, 200));
    raw.socket.destroy();
    const rst = raw.frames.filter((f) => f.type === FrameType.RST_STREAM);
    expect(rst.map((f) => [f.id, f.payload.readUInt32BE(0)])).toEqual([
      [1, ErrorCode.FRAME_SIZE_ERROR],
    ]);
    expect(raw.frames.some((f) => f.type === FrameType.GOAWAY)).toBe(false);
  });

  it("streams beyond the limit are refused", async () => {
    const { port } = await serve(() => {}, { maxConcurrentStreams: 2 });
    const raw = await rawClient(port);
    raw.socket.write(
      Buffer.concat([
        start,
        ...[1, 3, 5].map((id) => frame(FrameType.HEADERS, Flag.END_HEADERS, id, REQUEST)),
      ]),
    );
    await new Promise((r) => setTimeout(r, 200));
    raw.socket.destroy();
    const rst = raw.frames.filter((f) => f.type === FrameType.RST_STREAM);
    expect(rst.map((f) => [f.id, f.payload.readUInt32BE(0)])).toEqual([
      [5, ErrorCode.REFUSED_STREAM],
    ]);
  });
});

describe("requestHeaders", () => {
  it("refuses malformed requests", () => {
    const ok = [":method", "GET", ":scheme", "http", ":path", "/"];
    expect(requestHeaders(ok)).toBeDefined();
    expect(requestHeaders([...ok, ":path", "/again"])).toBeUndefined();
    expect(requestHeaders(["x", "1", ...ok])).toBeUndefined();
    expect(requestHeaders([...ok, "connection", "close"])).toBeUndefined();
    expect(requestHeaders([...ok, "te", "gzip"])).toBeUndefined();
    expect(requestHeaders([...ok, "te", "trailers"])).toBeDefined();
    expect(requestHeaders([":method", "GET", ":path", "/"])).toBeUndefined();
    expect(requestHeaders([...ok, ":status", "200"])).toBeUndefined();
  });
});

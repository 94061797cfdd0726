import {
  type ClientHttp2Stream,
  connect,
  createServer,
  type Http2Server,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CapabilitiesResponseSchema,
  DataService,
  type RaftBatch,
  RaftBatchAckSchema,
  RaftBatchSchema,
  RaftService,
  SingleKeyRequestSchema,
  ValueResponseSchema,
} from "@oprc/grpc-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decodeRaftBatch } from "../cluster/raft-wire.js";
import { frameMessage } from "./grpc-framing.js";
import { createGrpcUnaryFastPath, type GrpcUnaryFastPath } from "./grpc-unary-fast-path.js";

const signals: AbortSignal[] = [];
const impl = {
  capabilities: () => ({ stringIds: true }), // an init shape, not a message
  async getValue(
    req: { key: number; clsId: string },
    ctx: {
      signal: AbortSignal;
      requestHeader: Headers;
      responseHeader: Headers;
      responseTrailer: Headers;
    },
  ) {
    signals.push(ctx.signal);
    if (req.key === 4) {
      ctx.responseHeader.set("x-answer-header", "h");
      ctx.responseHeader.set("content-type", "text/plain"); // the gRPC one wins
      ctx.responseTrailer.set("x-answer-trailer", "t");
    }
    if (req.key === 1) {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      throw ctx.signal.reason;
    }
    if (req.key === 2) {
      const md = new Headers({ "odgm-actual-version": "7" });
      throw new ConnectError("[version_mismatch] 100% wrong: é", Code.Aborted, md);
    }
    if (req.key === 3) throw new TypeError("secret");
    // A handler's bug: a response protobuf-es cannot encode.
    if (req.key === 5) return { ...create(ValueResponseSchema), objectVersion: "x" as never };
    return create(ValueResponseSchema, { key: `${req.clsId}:${ctx.requestHeader.get("x-tag")}` });
  },
};
/** Batches the client-stream handler has read, as it reads them. */
const seen: bigint[] = [];
/** Whether each call the interceptor saw was a stream call. */
const kinds: boolean[] = [];
let stopAfter = Number.POSITIVE_INFINITY;
const raft = {
  async stream(requests: AsyncIterable<RaftBatch>) {
    const groups: string[] = [];
    for await (const b of requests) {
      seen.push(b.toNode);
      if (b.toNode === 0n) throw new ConnectError("node 0 is nobody", Code.InvalidArgument);
      groups.push(String(b.toNode));
      if (groups.length >= stopAfter) break;
    }
    return { unknownGroups: groups };
  },
};
const instrumented: string[] = [];
/** Answers the fast path could not send, as it reported them. */
const sendErrors: unknown[] = [];
const fastPath = () =>
  createGrpcUnaryFastPath({
    services: [
      { service: DataService, impl },
      { service: RaftService, impl: raft, streams: true },
    ],
    readMaxBytes: 1024,
    writeMaxBytes: 1024,
    interceptors: [
      (next) => (req) => {
        instrumented.push(req.method.name);
        kinds.push(req.stream);
        return next(req);
      },
    ],
    onSendError: (err) => sendErrors.push(err),
  });
const fast = fastPath();
/** The fast path the test server offers its streams to, after `tamper` changed them. */
let active: GrpcUnaryFastPath = fast;
let tamper: ((stream: ServerHttp2Stream) => void) | undefined;

let server: Http2Server;
let url: string;
beforeAll(async () => {
  server = createServer();
  server.on("stream", (stream, headers) => {
    tamper?.(stream);
    if (active(stream, headers)) return;
    stream.respond({ ":status": 299 });
    stream.end("fallback");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const frame = frameMessage;
const getValue = (key: number) =>
  frame(toBinary(SingleKeyRequestSchema, create(SingleKeyRequestSchema, { clsId: "c", key })));

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: Buffer;
}

/** Calls `path` with `body`, or with what `body` writes (then ends) when it is a function. */
function call(
  path: string,
  body: Buffer | ((req: ClientHttp2Stream) => void),
  headers: Record<string, string> = {},
  cancelAfterMs?: number,
): Promise<Answer> {
  const session = connect(url);
  return new Promise<Answer>((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let head: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      head = h;
    });
    req.on("trailers", (t) => {
      trailers = t;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      resolve({
        status: Number(head[":status"]),
        headers: head,
        trailers,
        body: Buffer.concat(chunks),
      });
      // A client stream may still be open on this side: the answer ends the call.
      req.close();
    });
    req.on("close", () => {
      if (cancelAfterMs !== undefined)
        resolve({ status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0) });
    });
    req.on("error", reject);
    if (typeof body === "function") body(req);
    else req.end(body);
    if (cancelAfterMs !== undefined) setTimeout(() => req.close(), cancelAfterMs);
  }).finally(() => session.close());
}

describe("createGrpcUnaryFastPath", () => {
  it("serves a unary call with the request headers in the context, instrumented", async () => {
    const r = await call("/oprc.DataService/GetValue", getValue(9), { "x-tag": "t1" });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("application/grpc+proto");
    expect(r.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(ValueResponseSchema, r.body.subarray(5)).key).toBe("c:t1");
    expect(instrumented).toContain("GetValue");
    const caps = await call("/oprc.DataService/Capabilities", frame(new Uint8Array()));
    expect(fromBinary(CapabilitiesResponseSchema, caps.body.subarray(5)).stringIds).toBe(true);
  });

  it("sends the headers and trailers a handler set", async () => {
    const r = await call("/oprc.DataService/GetValue", getValue(4));
    expect(r.headers["x-answer-header"]).toBe("h");
    expect(r.headers["content-type"]).toBe("application/grpc+proto");
    expect(r.trailers["x-answer-trailer"]).toBe("t");
    expect(r.trailers["grpc-status"]).toBe("0");
  });

  it("errors: status, percent-encoded message, metadata in trailers; unexpected → INTERNAL", async () => {
    const r = await call("/oprc.DataService/GetValue", getValue(2));
    expect(r.trailers["grpc-status"]).toBe(String(Code.Aborted));
    expect(decodeURIComponent(String(r.trailers["grpc-message"]))).toBe(
      "[version_mismatch] 100% wrong: é",
    );
    expect(r.trailers["odgm-actual-version"]).toBe("7");
    const internal = await call("/oprc.DataService/GetValue", getValue(3));
    expect(internal.trailers["grpc-status"]).toBe(String(Code.Internal));
    expect(internal.trailers["grpc-message"]).toBe("internal%20error");
  });

  it("grpc-timeout: the deadline aborts the handler's signal and answers DEADLINE_EXCEEDED", async () => {
    const r = await call("/oprc.DataService/GetValue", getValue(1), { "grpc-timeout": "30m" });
    expect(r.trailers["grpc-status"]).toBe(String(Code.DeadlineExceeded));
    expect(signals.at(-1)?.aborted).toBe(true);
    const bad = await call("/oprc.DataService/GetValue", getValue(9), { "grpc-timeout": "soon" });
    expect(bad.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
  });

  it("a client that goes away aborts the handler's signal", async () => {
    const before = signals.length;
    await call("/oprc.DataService/GetValue", getValue(1), {}, 50);
    await new Promise((r) => setTimeout(r, 50));
    expect(signals.length).toBe(before + 1);
    expect(signals.at(-1)?.aborted).toBe(true);
    expect(ConnectError.from(signals.at(-1)?.reason).code).toBe(Code.Canceled);
  });

  it("framing errors: oversized, truncated, extra message, compressed flag, bad protobuf", async () => {
    const path = "/oprc.DataService/GetValue";
    const big = frame(new Uint8Array(2000));
    expect((await call(path, big)).trailers["grpc-status"]).toBe(String(Code.ResourceExhausted));
    expect((await call(path, getValue(9).subarray(0, 7))).trailers["grpc-status"]).toBe(
      String(Code.InvalidArgument),
    );
    expect(
      (await call(path, Buffer.concat([getValue(9), getValue(9)]))).trailers["grpc-status"],
    ).toBe(String(Code.Unimplemented));
    expect((await call(path, frame(new Uint8Array([8, 1]), 1))).trailers["grpc-status"]).toBe(
      String(Code.Internal),
    );
    // Bytes that are not the request message are the client's error (spec §6).
    expect((await call(path, frame(new Uint8Array([0x0a, 0xff])))).trailers["grpc-status"]).toBe(
      String(Code.InvalidArgument),
    );
  });

  it("leaves everything else to the fallback (Connect)", async () => {
    const ok = getValue(9);
    expect((await call("/oprc.DataService/ListValues", ok)).status).toBe(299); // streaming
    expect((await call("/oprc.Other/GetValue", ok)).status).toBe(299);
    expect(
      (await call("/oprc.DataService/GetValue", ok, { "content-type": "application/grpc+json" }))
        .status,
    ).toBe(299);
    expect(
      (await call("/oprc.DataService/GetValue", ok, { "content-type": "application/grpc-web" }))
        .status,
    ).toBe(299);
    expect((await call("/oprc.DataService/GetValue", ok, { "grpc-encoding": "gzip" })).status).toBe(
      299,
    );
    expect(
      (await call("/oprc.DataService/GetValue", ok, { "content-type": "application/proto" }))
        .status,
    ).toBe(299);
  });
});

describe("createGrpcUnaryFastPath, client streams", () => {
  const batch = (toNode: bigint) =>
    frame(toBinary(RaftBatchSchema, create(RaftBatchSchema, { fromNode: 1n, toNode })));

  /** Writes `parts` one by one (each after `before(i)` resolves); ends unless `open`. */
  function stream(
    parts: Buffer[],
    o: { before?: (i: number) => Promise<void>; open?: boolean } = {},
  ): Promise<Answer> {
    return call("/oprc.RaftService/Stream", (req) => {
      void (async () => {
        for (const [i, part] of parts.entries()) {
          await o.before?.(i);
          if (req.closed) return;
          req.write(part);
        }
        if (o.open !== true) req.end();
      })();
    });
  }
  const ack = (a: Answer) => fromBinary(RaftBatchAckSchema, a.body.subarray(5)).unknownGroups;

  it("hands each message to the handler as it arrives, and answers once it returns", async () => {
    seen.length = 0;
    kinds.length = 0;
    stopAfter = Number.POSITIVE_INFINITY;
    const a = await stream([batch(1n), batch(2n), batch(3n)], {
      // Each batch waits for the handler to have read the one before: nothing is buffered
      // until the end.
      before: async (i) => {
        for (let n = 0; n < 200 && seen.length < i; n++) await new Promise((r) => setTimeout(r, 5));
      },
    });
    expect(seen).toEqual([1n, 2n, 3n]);
    expect(a.status).toBe(200);
    expect(a.trailers["grpc-status"]).toBe("0");
    expect(ack(a)).toEqual(["1", "2", "3"]);
    expect(kinds).toEqual([true]);
  });

  it("several messages in one chunk and one split across chunks", async () => {
    seen.length = 0;
    const all = Buffer.concat([batch(4n), batch(5n), batch(6n)]);
    const a = await stream([all.subarray(0, 3), all.subarray(3, 20), all.subarray(20)]);
    expect(seen).toEqual([4n, 5n, 6n]);
    expect(ack(a)).toEqual(["4", "5", "6"]);
  });

  it("a handler that returns before the client ends answers at once", async () => {
    stopAfter = 1;
    try {
      const a = await stream([batch(7n)], { open: true });
      expect(a.trailers["grpc-status"]).toBe("0");
      expect(ack(a)).toEqual(["7"]);
    } finally {
      stopAfter = Number.POSITIVE_INFINITY;
    }
  });

  it("reads the messages with the service's own decoder when it has one", async () => {
    const decoded: number[] = [];
    active = createGrpcUnaryFastPath({
      services: [
        {
          service: RaftService,
          impl: raft,
          streams: true,
          decoders: {
            stream: (bytes) => {
              decoded.push(bytes.length);
              if (bytes.length === 0) throw new Error("nothing to read");
              return decodeRaftBatch(bytes);
            },
          },
        },
      ],
      readMaxBytes: 1024,
      writeMaxBytes: 1024,
      interceptors: [],
    });
    try {
      seen.length = 0;
      const a = await stream([batch(8n), batch(9n)]);
      expect(seen).toEqual([8n, 9n]);
      expect(ack(a)).toEqual(["8", "9"]);
      expect(decoded).toEqual([batch(8n).length - 5, batch(9n).length - 5]);
      // What the decoder refuses is the client's error, as protobuf-es's refusals are.
      const bad = await stream([frame(new Uint8Array(0))]);
      expect(bad.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(String(bad.trailers["grpc-message"]))).toBe(
        "parse binary: nothing to read",
      );
    } finally {
      active = fast;
    }
  });

  it("a handler's error and a framing error end the call with their status", async () => {
    const refused = await stream([batch(0n)], { open: true });
    expect(refused.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
    expect(decodeURIComponent(String(refused.trailers["grpc-message"]))).toBe("node 0 is nobody");
    const big = await stream([batch(1n), frame(new Uint8Array(2000))], { open: true });
    expect(big.trailers["grpc-status"]).toBe(String(Code.ResourceExhausted));
    const cut = await stream([batch(1n), batch(2n).subarray(0, 6)]);
    expect(cut.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
  });
});

describe("createGrpcUnaryFastPath, when Node refuses an answer", () => {
  afterEach(() => {
    active = fast;
    tamper = undefined;
    sendErrors.length = 0;
  });

  it("on a Node that refuses flat header lists (22.19 does), answers with header objects", async () => {
    // A fresh fast path: what it learns here would stay with it.
    active = fastPath();
    const forms: string[] = [];
    tamper = (stream) => {
      const respond = stream.respond.bind(stream);
      stream.respond = (headers, options) => {
        forms.push(Array.isArray(headers) ? "list" : "object");
        if (Array.isArray(headers)) {
          // What Node 22.19 throws.
          throw Object.assign(
            new TypeError(
              'The "headers" argument must be of type object. Received an instance of Array',
            ),
            { code: "ERR_INVALID_ARG_TYPE" },
          );
        }
        respond(headers, options);
      };
    };
    const plain = await call("/oprc.DataService/GetValue", getValue(9), { "x-tag": "a" });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-type"]).toBe("application/grpc+proto");
    expect(plain.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(ValueResponseSchema, plain.body.subarray(5)).key).toBe("c:a");
    const set = await call("/oprc.DataService/GetValue", getValue(4));
    expect(set.headers["x-answer-header"]).toBe("h");
    expect(set.trailers["x-answer-trailer"]).toBe("t");
    const failed = await call("/oprc.DataService/GetValue", getValue(2));
    expect(failed.trailers["grpc-status"]).toBe(String(Code.Aborted));
    // Tried once, then objects only.
    expect(forms).toEqual(["list", "object", "object", "object"]);
    expect(sendErrors).toEqual([]);
  });

  it.each(["respond", "sendTrailers"] as const)(
    "%s refused by Node resets the stream, is reported, and the server goes on",
    async (method) => {
      tamper = (stream) => {
        stream[method] = () => {
          throw new Error(`${method} refused by the test`);
        };
      };
      // An answer and an error answer take the same road.
      for (const key of [9, 2]) {
        await expect(call("/oprc.DataService/GetValue", getValue(key))).rejects.toThrow(
          /NGHTTP2_INTERNAL_ERROR/,
        );
      }
      expect(sendErrors.map((e) => (e as Error).message)).toEqual([
        `${method} refused by the test`,
        `${method} refused by the test`,
      ]);
      tamper = undefined;
      const r = await call("/oprc.DataService/GetValue", getValue(9));
      expect(r.trailers["grpc-status"]).toBe("0");
    },
  );

  it("a response that cannot be encoded answers INTERNAL, and the server goes on", async () => {
    const r = await call("/oprc.DataService/GetValue", getValue(5));
    expect(r.status).toBe(200);
    expect(r.trailers["grpc-status"]).toBe(String(Code.Internal));
    expect(r.body.length).toBe(0);
    expect((await call("/oprc.DataService/GetValue", getValue(9))).trailers["grpc-status"]).toBe(
      "0",
    );
  });
});

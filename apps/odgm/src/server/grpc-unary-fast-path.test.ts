import { connect, createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CapabilitiesResponseSchema,
  DataService,
  SingleKeyRequestSchema,
  ValueResponseSchema,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcUnaryFastPath } from "./grpc-unary-fast-path.js";

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
    return create(ValueResponseSchema, { key: `${req.clsId}:${ctx.requestHeader.get("x-tag")}` });
  },
};
const instrumented: string[] = [];
const fast = createGrpcUnaryFastPath({
  services: [{ service: DataService, impl }],
  readMaxBytes: 1024,
  writeMaxBytes: 1024,
  interceptors: [
    (next) => (req) => {
      instrumented.push(req.method.name);
      return next(req);
    },
  ],
});

let server: Http2Server;
let url: string;
beforeAll(async () => {
  server = createServer();
  server.on("stream", (stream, headers) => {
    if (fast(stream, headers)) return;
    stream.respond({ ":status": 299 });
    stream.end("fallback");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const frame = (body: Uint8Array, flags = 0): Buffer => {
  const out = Buffer.alloc(5 + body.length);
  out[0] = flags;
  out.writeUInt32BE(body.length, 1);
  out.set(body, 5);
  return out;
};
const getValue = (key: number) =>
  frame(toBinary(SingleKeyRequestSchema, create(SingleKeyRequestSchema, { clsId: "c", key })));

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: Buffer;
}

function call(
  path: string,
  body: Buffer,
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
    req.on("end", () =>
      resolve({
        status: Number(head[":status"]),
        headers: head,
        trailers,
        body: Buffer.concat(chunks),
      }),
    );
    req.on("close", () => {
      if (cancelAfterMs !== undefined)
        resolve({ status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0) });
    });
    req.on("error", reject);
    req.end(body);
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

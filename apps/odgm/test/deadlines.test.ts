// Client deadlines on every server path. A deadline longer than a Node timer can hold
// (2^31-1 ms, ~24.8 days) used to fire after 1 ms — a 30-day grpcio timeout failed most
// calls with DEADLINE_EXCEEDED; now it means "no deadline". Short deadlines still fire.
// Raw HTTP/2 requests, so the client's own timer is not involved.
import { connect as h2connect } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { SingleKeyRequestSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

// Every call takes 30 ms and gives up when its deadline fires, so a deadline that fires
// after 1 ms always wins the race.
const slow: Interceptor = (next) => async (req) => {
  await new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 30);
    req.signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(req.signal.reason);
      },
      { once: true },
    );
  });
  return next(req);
};

let temp: TempNode;
let url: string;
beforeAll(async () => {
  temp = await startTempNode({}, undefined, { interceptors: [slow] });
  url = temp.node.url;
});
afterAll(async () => {
  await temp?.close();
});

const body = toBinary(
  SingleKeyRequestSchema,
  create(SingleKeyRequestSchema, { clsId: "default", objectIdStr: "missing", keyStr: "k" }),
);

/** One raw HTTP/2 call: the gRPC status (trailers), or the Connect error code (JSON body). */
async function call(headers: Record<string, string>, payload: Uint8Array): Promise<string> {
  const session = h2connect(url);
  try {
    return await new Promise<string>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/oprc.DataService/GetValue",
        ...headers,
      });
      let status: string | undefined;
      let contentType = "";
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        contentType = String(h["content-type"] ?? "");
        if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      });
      stream.on("trailers", (t) => {
        status = String(t["grpc-status"]);
      });
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (status !== undefined) return resolve(`grpc ${status}`);
        if (!contentType.includes("json")) return resolve(`connect ok (${contentType})`);
        const json = JSON.parse(Buffer.concat(chunks).toString()) as { code?: string };
        resolve(`connect ${json.code}`);
      });
      stream.on("error", reject);
      stream.end(payload);
    });
  } finally {
    session.close();
  }
}

const grpcFrame = (msg: Uint8Array): Uint8Array => {
  const out = new Uint8Array(5 + msg.length);
  new DataView(out.buffer).setUint32(1, msg.length);
  out.set(msg, 5);
  return out;
};

describe("client deadlines", () => {
  const grpc = { "content-type": "application/grpc", te: "trailers" };
  const connectProto = { "content-type": "application/proto", "connect-protocol-version": "1" };

  it("a 30-day gRPC deadline is no deadline (fast path)", async () => {
    // 720H = 30 days; OK (0) is the call's real answer (an empty value), DEADLINE_EXCEEDED 4.
    expect(await call({ ...grpc, "grpc-timeout": "720H" }, grpcFrame(body))).toBe("grpc 0");
  });

  it("a 30-day Connect deadline is no deadline (connect-node)", async () => {
    expect(
      await call({ ...connectProto, "connect-timeout-ms": String(30 * 86_400_000) }, body),
    ).toBe("connect ok (application/proto)");
  });

  it("a deadline shorter than the call still fires on both paths", async () => {
    expect(await call({ ...grpc, "grpc-timeout": "5m" }, grpcFrame(body))).toBe("grpc 4");
    expect(await call({ ...connectProto, "connect-timeout-ms": "5" }, body)).toBe(
      "connect deadline_exceeded",
    );
  });

  it("the longest deadline a timer holds is kept as it is", async () => {
    // 596H = 2,145,600,000 ms < 2^31-1: a real (long) deadline; the call answers normally.
    expect(await call({ ...grpc, "grpc-timeout": "596H" }, grpcFrame(body))).toBe("grpc 0");
  });
});

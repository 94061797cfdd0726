import { create } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { DataService, ValueResponseSchema } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { createInProcessClient } from "./in-process-client.js";

// A DataService whose handlers answer from the request, fail on demand and wait on the
// call's signal, so the in-process client can be held to what a remote Connect client sees.
const impl: Partial<ServiceImpl<typeof DataService>> = {
  getValue(req, ctx) {
    if (req.keyStr === "missing") {
      throw new ConnectError("[not_found] no such entry", Code.NotFound, { "odgm-why": "test" });
    }
    if (req.keyStr === "wait") {
      return new Promise((_, reject) => {
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      });
    }
    ctx.responseHeader.set("x-seen-token", ctx.requestHeader.get("authorization") ?? "");
    return create(ValueResponseSchema, {
      key: `${req.clsId}/${req.objectIdStr}/${req.keyStr}`,
      objectVersion: BigInt(req.partitionId),
      value: { data: new Uint8Array([1, 2, 3]) },
    });
  },
  async *listValues(req) {
    for (let i = 0; i < req.limit; i++) yield { key: `k${i}`, version: BigInt(i) };
    if (req.keyPrefix === "fail") throw new ConnectError("[internal] broke", Code.Internal);
  },
};

const seen: string[] = [];
const probe: Interceptor = (next) => async (req) => {
  seen.push(`${req.method.name}:${req.stream ? "stream" : "unary"}`);
  return next(req);
};

const inProcess = createInProcessClient(DataService, impl, [probe]);
const viaRouter = createClient(
  DataService,
  createRouterTransport((router) => router.service(DataService, impl), {
    router: { interceptors: [probe] },
  }),
);

async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await p };
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage, why: e.metadata.get("odgm-why") };
  }
}

describe("createInProcessClient", () => {
  it("answers unary calls exactly as a client over Connect's router transport does", async () => {
    for (const req of [
      { clsId: "c", partitionId: 3, objectIdStr: "o", keyStr: "k" },
      { clsId: "c", objectIdStr: "o", keyStr: "missing" },
    ]) {
      expect(await outcome(inProcess.getValue(req))).toEqual(
        await outcome(viaRouter.getValue(req)),
      );
    }
  });

  it("streams server-streaming answers and their errors like the router transport", async () => {
    const collect = async (c: typeof inProcess, keyPrefix: string) => {
      const keys: string[] = [];
      try {
        for await (const v of c.listValues({ clsId: "c", objectIdStr: "o", limit: 3, keyPrefix })) {
          keys.push(v.key);
        }
        return { keys };
      } catch (err) {
        return { keys, code: ConnectError.from(err).code };
      }
    };
    for (const prefix of ["", "fail"]) {
      expect(await collect(inProcess, prefix)).toEqual(await collect(viaRouter, prefix));
    }
    expect(await collect(inProcess, "fail")).toEqual({
      keys: ["k0", "k1", "k2"],
      code: Code.Internal,
    });
  });

  it("runs the interceptors on unary and streaming calls", async () => {
    seen.length = 0;
    await inProcess.getValue({ clsId: "c", objectIdStr: "o", keyStr: "k" });
    for await (const _ of inProcess.listValues({ clsId: "c", objectIdStr: "o", limit: 1 })) {
      // drain
    }
    expect(seen).toEqual(["GetValue:unary", "ListValues:stream"]);
  });

  it("passes request headers to the handler and its response headers back", async () => {
    let token: string | null = null;
    await inProcess.getValue(
      { clsId: "c", objectIdStr: "o", keyStr: "k" },
      { headers: { authorization: "Bearer t" }, onHeader: (h) => (token = h.get("x-seen-token")) },
    );
    expect(token).toBe("Bearer t");
  });

  it("ends a call at its deadline with DEADLINE_EXCEEDED and aborts the handler", async () => {
    const r = await outcome(
      inProcess.getValue({ clsId: "c", objectIdStr: "o", keyStr: "wait" }, { timeoutMs: 20 }),
    );
    expect(r).toMatchObject({ code: Code.DeadlineExceeded });
  });

  it("ends a call whose signal aborts with CANCELED", async () => {
    const ac = new AbortController();
    const p = outcome(
      inProcess.getValue({ clsId: "c", objectIdStr: "o", keyStr: "wait" }, { signal: ac.signal }),
    );
    ac.abort();
    expect(await p).toMatchObject({ code: Code.Canceled });
  });

  it("answers methods the implementation lacks with UNIMPLEMENTED", async () => {
    expect(
      await outcome(inProcess.deleteValue({ clsId: "c", objectIdStr: "o", keyStr: "k" })),
    ).toMatchObject({ code: Code.Unimplemented });
  });
});

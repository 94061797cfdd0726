import {
  type Client,
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
} from "@connectrpc/connect";
import { DataService, LEADER_HINT_HEADER, OprcFunction } from "@oprc/grpc-api";
import { createTidClock } from "@oprc/oprc-id";
import { describe, expect, it } from "vitest";
import { memoryServiceRoutes } from "../test/fixtures/memory-data-service.js";
import type { GatewayError } from "./gateway-error.js";
import { createRestGateway, documentRoute, type RestGatewayOptions } from "./rest-gateway.js";

function gateway(extra: Partial<RestGatewayOptions> = {}) {
  const transport = createRouterTransport(memoryServiceRoutes());
  return createRestGateway({ data: createClient(DataService, transport), ...extra });
}

describe("createRestGateway options", () => {
  it("ready() false → /readyz 503; true → 200", async () => {
    let ready = false;
    const app = gateway({ ready: () => ready });
    const res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unavailable");
    ready = true;
    expect((await app.request("/readyz")).status).toBe(200);
  });

  it("the default readiness counts an upstream that wants a token as answering", async () => {
    const refuse = (code: Code) =>
      createRestGateway({
        data: createClient(
          DataService,
          createRouterTransport(memoryServiceRoutes(), {
            router: {
              interceptors: [
                () => () => {
                  throw new ConnectError("no", code);
                },
              ],
            },
          }),
        ),
      });
    expect((await refuse(Code.Unauthenticated).request("/readyz")).status).toBe(200);
    expect((await refuse(Code.PermissionDenied).request("/readyz")).status).toBe(200);
    expect((await refuse(Code.Unavailable).request("/readyz")).status).toBe(503);
    expect((await gateway().request("/readyz")).status).toBe(200);
  });

  it("readyDetail() adds fields to /readyz without changing readiness", async () => {
    let ready = true;
    const app = gateway({ ready: () => ready, readyDetail: () => ({ zenoh: "down" }) });
    const ok = await app.request("/readyz");
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ status: "ready", zenoh: "down" });
    ready = false;
    const res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      "not ready (zenoh down)",
    );
  });

  it("passes the request's Authorization, trace context and read consistency on to the upstream call", async () => {
    const seen: (string | null)[] = [];
    const traces: (string | null)[] = [];
    const consistency: (string | null)[] = [];
    const transport = createRouterTransport(memoryServiceRoutes(), {
      router: {
        interceptors: [
          (next) => (req) => {
            seen.push(req.header.get("authorization"));
            traces.push(req.header.get("traceparent"));
            consistency.push(req.header.get("odgm-read-consistency"));
            return next(req);
          },
        ],
      },
    });
    const app = createRestGateway({ data: createClient(DataService, transport) });
    await app.request("/api/class/c/0/objects/o/values/k", {
      headers: {
        authorization: "Bearer t0k3n",
        traceparent: "00-ab-cd-01",
        "odgm-read-consistency": "follower",
      },
    });
    await app.request("/api/class/c/0/objects/o/values/k");
    expect(seen).toEqual(["Bearer t0k3n", null]);
    expect(traces).toEqual(["00-ab-cd-01", null]);
    expect(consistency).toEqual(["follower", null]);
  });

  it("without a function client invocations are 501; without metrics /metrics is 404", async () => {
    const app = gateway();
    const res = await app.request("/api/class/c/0/invokes/echo", { method: "POST" });
    expect(res.status).toBe(501);
    expect((await app.request("/metrics")).status).toBe(404);
    const doc = (await (await app.request("/openapi.json")).json()) as {
      paths: Record<string, unknown>;
    };
    expect(doc.paths["/metrics"]).toBeUndefined();
  });

  it("with a function client invocations reach it", async () => {
    const transport = createRouterTransport(memoryServiceRoutes());
    const app = createRestGateway({
      data: createClient(DataService, transport),
      functions: createClient(OprcFunction, transport),
    });
    const res = await app.request("/api/class/c/0/invokes/echo", { method: "POST", body: "hi" });
    expect(await res.text()).toBe("hi");
  });

  it("ids: unicode mode and maxLength follow the options", async () => {
    const app = gateway({ ids: { unicode: true, maxLength: 12 } });
    expect((await app.request("/api/class/c/0/objects/Caf%C3%A9", { method: "PUT" })).status).toBe(
      400,
    );
    // The fixture normalizes strictly, so a unicode id passes the gateway and fails upstream with 400 too;
    // what matters here is the gateway's own length limit and message.
    const long = await app.request(`/api/class/c/0/objects/${"a".repeat(13)}`);
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: { message: string } }).error.message).toContain("12");
    const hash = await app.request("/debug/object-hash/c/0/Caf%C3%A9");
    expect(((await hash.json()) as { objectId: string }).objectId).toBe("café");
  });

  it("bodyLimit applies to streamed bodies without Content-Length", async () => {
    const app = gateway({ bodyLimit: 1024 });
    const chunk = new Uint8Array(600);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const res = await app.request("/api/class/c/0/objects/o/values/k", {
      method: "PUT",
      body: stream,
      headers: { "content-type": "application/octet-stream" },
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await app.request("/healthz")).status).toBe(200);
  });

  it("onServerError sees 5xx errors with their cause; the client does not", async () => {
    const seen: GatewayError[] = [];
    const app = gateway({ onServerError: (e) => seen.push(e) });
    const res = await app.request("/api/class/crash/0/objects/o");
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain("secret");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.code).toBe("internal");
    expect(seen[0]?.cause).toBeInstanceOf(ConnectError);
    await app.request("/api/class/c/0/objects/nope");
    expect(seen).toHaveLength(1);
  });

  it("a 503 carries Retry-After and the upstream's leader hint", async () => {
    const unavailable = (hint?: string) =>
      createRestGateway({
        data: {
          getValue: () =>
            Promise.reject(
              new ConnectError(
                "could not forward to the leader",
                Code.Unavailable,
                hint === undefined ? undefined : { [LEADER_HINT_HEADER]: hint },
              ),
            ),
        } as unknown as Client<typeof DataService>,
      });
    const hinted = await unavailable("http://10.0.0.3:7003").request(
      "/api/class/c/0/objects/o/values/k",
    );
    expect(hinted.status).toBe(503);
    expect(hinted.headers.get("retry-after")).toBe("1");
    expect(hinted.headers.get(LEADER_HINT_HEADER)).toBe("http://10.0.0.3:7003");
    const plain = await unavailable().request("/api/class/c/0/objects/o/values/k");
    expect(plain.status).toBe(503);
    expect(plain.headers.get("retry-after")).toBe("1");
    expect(plain.headers.has(LEADER_HINT_HEADER)).toBe(false);
    // Other errors carry neither.
    const missing = await gateway().request("/api/class/c/0/objects/nope");
    expect(missing.status).toBe(404);
    expect(missing.headers.has("retry-after")).toBe(false);
  });

  it("a request the client abandoned is a 499, not a server error", async () => {
    const seen: GatewayError[] = [];
    // The upstream call ends when the request's signal aborts, as a real client's does.
    const data = {
      getValue: (_req: unknown, opts: { signal?: AbortSignal }) =>
        new Promise((_, reject) => {
          opts.signal?.addEventListener("abort", () => reject(opts.signal?.reason), {
            once: true,
          });
        }),
    } as unknown as Client<typeof DataService>;
    const app = createRestGateway({ data, onServerError: (e) => seen.push(e) });
    const controller = new AbortController();
    const pending = app.request("/api/class/c/0/objects/o/values/k", { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    expect((await pending).status).toBe(499);
    // An upstream CANCELED (the in-process transport's answer to an abort) is the same.
    const canceled = createRestGateway({
      data: {
        getValue: () => Promise.reject(new ConnectError("the client went away", Code.Canceled)),
      } as unknown as Client<typeof DataService>,
      onServerError: (e) => seen.push(e),
    });
    expect((await canceled.request("/api/class/c/0/objects/o/values/k")).status).toBe(499);
    expect(seen).toEqual([]);
  });

  it("tidClock is used for POST /objects", async () => {
    const tidClock = createTidClock({ clockId: 7, now: () => 1_700_000_000_000_000n });
    const app = gateway({ tidClock });
    const res = await app.request("/api/class/c/0/objects", { method: "POST" });
    const expected = createTidClock({ clockId: 7, now: () => 1_700_000_000_000_000n }).next();
    expect(((await res.json()) as { objectIdStr: string }).objectIdStr).toBe(expected);
  });
});

describe("OpenAPI document", () => {
  it("documents exactly the routes the app serves", async () => {
    const app = gateway({ metrics: () => "" });
    const doc = (await (await app.request("/openapi.json")).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.openapi).toBe("3.1.0");
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops))
        documented.add(`${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ":$1")}`);
    }
    const served = new Set(
      app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`),
    );
    expect([...served].sort()).toEqual([...documented].sort());
    expect(served.size).toBe(19);
  });

  it("documentRoute serves a host's route and puts it in the document", async () => {
    const app = gateway();
    documentRoute(
      app,
      {
        method: "post",
        path: "/api/things/:id",
        operationId: "makeThing",
        summary: "Makes a thing",
        jsonBody: true,
        success: { status: 201, description: "made" },
        errors: [400],
      },
      (c) => c.json({ id: c.req.param("id") }, 201),
    );
    const res = await app.request("/api/things/7", { method: "POST", body: "{}" });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: "7" });
    const doc = (await (await app.request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(Object.keys(doc.paths["/api/things/{id}"]?.post?.responses ?? {}).sort()).toEqual([
      "201",
      "400",
      "500",
      "503",
    ]);
  });
});

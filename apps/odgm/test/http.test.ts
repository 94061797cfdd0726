// The node's HTTP surface: collections over REST and gRPC, HTTP/1.1 (curl) and h2c on one
// port, health and readiness, Prometheus metrics with the spec's names, OpenTelemetry spans,
// message limits and malformed input, and the legacy-storage flag end to end.
import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { connect as http2Connect } from "node:http2";
import { promisify } from "node:util";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { type Span, type Tracer, trace } from "@opentelemetry/api";
import {
  CollectionService,
  DataService,
  Health,
  MaintenanceService,
  HealthCheckResponse_ServingStatus as Serving,
  SetKeyRequestSchema,
} from "@oprc/grpc-api";
import { createConnectCaller, createPythonCaller, skipPythonInterop } from "@oprc/grpc-api/testing";
import { partitionOf } from "@oprc/oprc-id";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode, tempDir } from "./fixtures/temp-node.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const exec = promisify(execFile);

/** A minimal recording tracer provider: every span's name and attributes. */
const spans: { name: string; attributes: Record<string, unknown> }[] = [];
const recordingTracer = {
  startActiveSpan(name: string, ...args: unknown[]) {
    const fn = args.at(-1) as (span: Span) => unknown;
    const attributes: Record<string, unknown> = {};
    spans.push({ name, attributes });
    const span = {
      setAttribute(k: string, val: unknown) {
        attributes[k] = val;
        return span;
      },
      setStatus: () => span,
      end: () => {},
    } as unknown as Span;
    return fn(span);
  },
} as unknown as Tracer;
trace.setGlobalTracerProvider({ getTracer: () => recordingTracer });

let n: TempNode;
beforeAll(async () => {
  n = await startTempNode({ ODGM_MAX_MESSAGE_BYTES: String(64 * 1024) });
});
afterAll(async () => {
  trace.disable();
  await n?.close();
});

describe("collections", () => {
  it("refuses a collection that would take the node past ODGM_MAX_PARTITIONS", async () => {
    const small = await startTempNode({ ODGM_MAX_PARTITIONS: "10" });
    try {
      const post = (name: string, partitionCount: number) =>
        fetch(`${small.node.url}/api/collections`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name, partitionCount }),
        });
      // The default collection holds one partition.
      expect((await post("eight", 8)).status).toBe(201);
      const refused = await post("three", 3);
      expect(refused.status).toBe(507);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
        /to 12, above ODGM_MAX_PARTITIONS \(10\)/,
      );
      const admin = createClient(
        CollectionService,
        createGrpcTransport({ baseUrl: small.node.url }),
      );
      const grpc = await admin
        .createCollection({ name: "huge", partitionCount: 65_536 })
        .catch((e: unknown) => ConnectError.from(e).code);
      expect(grpc).toBe(Code.ResourceExhausted);
      // Re-creating an existing collection with the same spec is still a no-op.
      expect((await post("eight", 8)).status).toBeLessThan(300);
      expect((await post("one", 1)).status).toBe(201);
    } finally {
      await small.close();
    }
  });

  it("POST/GET /api/collections over plain HTTP/1.1 (curl)", async () => {
    const post = await exec("curl", [
      "-s",
      "--http1.1",
      "-w",
      "\n%{http_code} %{http_version}",
      "-X",
      "POST",
      "-H",
      "content-type: application/json",
      "-d",
      JSON.stringify({ name: "orders", partitionCount: 4 }),
      `${n.node.url}/api/collections`,
    ]);
    const [body, status] = post.stdout.split("\n");
    expect(status).toBe("201 1.1");
    expect(JSON.parse(body as string)).toMatchObject({
      name: "orders",
      partitionCount: 4,
      shardType: "basic",
    });
    const list = await exec("curl", ["-s", "--http1.1", `${n.node.url}/api/collections`]);
    expect(
      (JSON.parse(list.stdout) as { collections: { name: string }[] }).collections.map(
        (c) => c.name,
      ),
    ).toEqual(["default", "orders"]);
    const put = await exec("curl", [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "-X",
      "PUT",
      "-H",
      "content-type: application/json",
      "-d",
      '{"value":{"total":3}}',
      `${n.node.url}/api/class/orders/3/objects/o-1/values/summary`,
    ]);
    expect(Number(put.stdout)).toBeLessThan(300);
    const get = await exec("curl", [
      "-s",
      `${n.node.url}/api/class/orders/3/objects/o-1/values/summary`,
    ]);
    expect(JSON.parse(get.stdout)).toMatchObject({ value: { total: 3 } });
  });

  it("refuses bad and conflicting collections with fitting statuses; raft ones are served", async () => {
    const post = (body: unknown) =>
      fetch(`${n.node.url}/api/collections`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await post({ name: "orders", partitionCount: 4 })).status).toBe(201); // same spec: no-op
    expect((await post({ name: "orders", partitionCount: 2 })).status).toBe(409);
    expect((await post({ name: "bad/name" })).status).toBe(400);
    expect((await post({ name: "r", shardType: "raft" })).status).toBe(201);
    // More replicas than the one-member cluster has, or replicas of a basic shard: refused.
    expect((await post({ name: "r3", shardType: "raft", replicaCount: 3 })).status).toBe(400);
    expect((await post({ name: "b3", replicaCount: 3 })).status).toBe(400);
    expect((await post({ name: "x", partitionCount: "many" })).status).toBe(400);
    // gRPC CollectionService over h2c, same registry.
    const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: n.node.url }));
    await admin.createCollection({ name: "users" });
    const listed = await admin.listCollections({});
    expect(listed.collections.map((c) => c.name)).toEqual(["default", "orders", "r", "users"]);
    const err = await admin
      .createCollection({ name: "users", partitionCount: 3 })
      .catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.AlreadyExists);
    const raft = await admin
      .createCollection({ name: "r3", shardType: "raft", replicaCount: 3 })
      .catch((e: unknown) => e);
    expect(ConnectError.from(raft).code).toBe(Code.InvalidArgument);
    // A one-replica raft collection serves reads and writes through its group.
    const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
    await data.setValue({
      clsId: "r",
      objectIdStr: "o",
      keyStr: "k",
      value: { data: new Uint8Array([1]) },
    });
    const got = await data.getValue({ clsId: "r", objectIdStr: "o", keyStr: "k" });
    expect(got.objectVersion).toBe(1n);
  });

  it("unknown collection or partition → 404 over REST, NOT_FOUND over gRPC", async () => {
    expect((await fetch(`${n.node.url}/api/class/nope/0/objects/1`)).status).toBe(404);
    expect((await fetch(`${n.node.url}/api/class/orders/99/objects/1/values/a`)).status).toBe(404);
    const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
    const err = await data
      .get({ clsId: "orders", partitionId: 4, objectId: 1n })
      .catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.NotFound);
  });
});

describe("debug hash route", () => {
  it("uses the collection's own partition count unless ?partitions= overrides it", async () => {
    const post = await fetch(`${n.node.url}/api/collections`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "hashed", partitionCount: 7 }),
    });
    expect(post.status).toBeLessThan(300);
    const get = async (q: string) =>
      (await (await fetch(`${n.node.url}/debug/object-hash/hashed/0/User-1${q}`)).json()) as {
        partitions?: number;
        partition?: number;
      };
    expect(await get("")).toMatchObject({ partitions: 7, partition: partitionOf("user-1", 7) });
    expect(await get("?partitions=16")).toMatchObject({
      partitions: 16,
      partition: partitionOf("user-1", 16),
    });
    // An unknown collection: no partition without ?partitions=.
    const unknown = (await (await fetch(`${n.node.url}/debug/object-hash/nope/0/x`)).json()) as {
      partition?: number;
    };
    expect(unknown.partition).toBeUndefined();
  });
});

describe("OpenAPI document", () => {
  it("describes the node's own routes too: collections and the document itself", async () => {
    const doc = (await (await fetch(`${n.node.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(doc.paths["/api/collections"] ?? {}).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/openapi.json"] ?? {})).toEqual(["get"]);
    expect(Object.keys(doc.paths["/api/class/{cls}/{pid}/objects/{oid}"] ?? {}).length).toBe(4);
  });
});

describe("health, metrics and spans", () => {
  it("/healthz, /readyz and grpc.health.v1 answer SERVING", async () => {
    expect((await fetch(`${n.node.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${n.node.url}/readyz`)).status).toBe(200);
    const health = createClient(Health, createGrpcTransport({ baseUrl: n.node.url }));
    expect((await health.check({})).status).toBe(Serving.SERVING);
  });

  it("exports the spec's metric names, counting gRPC and REST requests", async () => {
    const data = createClient(
      DataService,
      createConnectTransport({ baseUrl: n.node.url, httpVersion: "1.1" }),
    );
    await data.setValue({
      clsId: "default",
      objectIdStr: "metric-obj",
      keyStr: "k",
      value: { data: utf8("x") },
    });
    await data.getValue({ clsId: "default", objectIdStr: "metric-obj", keyStr: "k" });
    await data.batchSetValues({
      clsId: "default",
      objectId: 5n,
      values: { a: { data: utf8("1") } },
      deleteKeys: ["b"],
    });
    await data.deleteValue({ clsId: "default", objectId: 5n, keyStr: "a" });
    await data.get({ clsId: "default", objectIdStr: "bad id!" }).catch(() => {});
    const text = await (await fetch(`${n.node.url}/metrics`)).text();
    for (const name of [
      "odgm_entry_reads_total",
      "odgm_entry_writes_total",
      "odgm_entry_deletes_total",
      "odgm_blob_fallback_reads_total",
      "odgm_entry_get_latency_ms",
      "odgm_batch_set_size",
      "odgm_objects_converted_total",
      "odgm_objects_pending_conversion_total",
      "odgm_string_id_normalize_errors_total",
      "odgm_string_id_length",
      "odgm_events_emitted_total",
      "odgm_events_truncated_batches_total",
      "odgm_event_queue_drops_total",
      "odgm_event_queue_length",
      "odgm_trigger_failures_total",
      "odgm_trigger_depth_exceeded_total",
      "odgm_rpc_requests_total",
    ]) {
      expect(text, name).toContain(`# TYPE ${name} `);
    }
    expect(text).toMatch(/odgm_entry_writes_total\{collection="default"\} [1-9]/);
    expect(text).toMatch(/odgm_entry_deletes_total\{collection="default"\} 1/);
    expect(text).toMatch(/odgm_string_id_normalize_errors_total [1-9]/);
    expect(text).toMatch(/odgm_string_id_length_count [1-9]/);
    expect(text).toMatch(/odgm_rpc_requests_total\{method="GetValue",code="ok"\} [1-9]/);
    expect(text).toMatch(/odgm_rpc_requests_total\{method="Get",code="invalid_argument"\} [1-9]/);
    expect(text).toMatch(/odgm_event_queue_length\{collection="default",partition="0"\} 0/);
    // REST requests run through the same handlers, so they are counted too.
    const before = /odgm_rpc_requests_total\{method="GetValue",code="ok"\} (\d+)/.exec(text)?.[1];
    await fetch(`${n.node.url}/api/class/default/0/objects/metric-obj/values/k`);
    const after = await (await fetch(`${n.node.url}/metrics`)).text();
    expect(/odgm_rpc_requests_total\{method="GetValue",code="ok"\} (\d+)/.exec(after)?.[1]).toBe(
      String(Number(before) + 1),
    );
  });

  it("records a span per RPC with object.id_str", async () => {
    const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
    await data.getValue({ clsId: "default", objectIdStr: "span-obj", keyStr: "k" });
    await data.getValue({ clsId: "default", objectId: 42n, key: 1 });
    const names = spans.filter((s) => s.name === "oprc.DataService/GetValue");
    expect(names.map((s) => s.attributes["object.id_str"])).toEqual(
      expect.arrayContaining(["span-obj", "42"]),
    );
    expect(names[0]?.attributes["rpc.method"]).toBe("GetValue");
  });
});

describe("limits and malformed input", () => {
  const clients = skipPythonInterop ? ["connect-node"] : ["connect-node", "python"];
  it.each(clients)(
    "an oversized request is RESOURCE_EXHAUSTED and the node keeps serving (%s)",
    async (which) => {
      const c = which === "python" ? createPythonCaller(n.target) : createConnectCaller(n.node.url);
      try {
        const big = create(SetKeyRequestSchema, {
          clsId: "default",
          objectId: 9n,
          key: 1,
          value: { data: new Uint8Array(100 * 1024) },
        });
        expect((await c.call(DataService.method.setValue, big)).code).toBe(Code.ResourceExhausted);
        const small = create(SetKeyRequestSchema, {
          clsId: "default",
          objectId: 9n,
          key: 1,
          value: { data: utf8("ok") },
        });
        expect((await c.call(DataService.method.setValue, small)).code).toBe(0);
        // A response over the limit: an object whose entries together exceed 64 KiB.
        for (let k = 2; k < 6; k++) {
          const part = create(SetKeyRequestSchema, {
            clsId: "default",
            objectId: 9n,
            key: k,
            value: { data: new Uint8Array(30 * 1024) },
          });
          expect((await c.call(DataService.method.setValue, part)).code).toBe(0);
        }
        const get = await c.call(
          DataService.method.get,
          create(DataService.method.get.input, { clsId: "default", objectId: 9n }),
        );
        expect(get.code).toBe(Code.ResourceExhausted);
      } finally {
        await c.close();
      }
    },
  );

  it("a malformed protobuf body or invalid UTF-8 is INVALID_ARGUMENT on every path, never a crash", async () => {
    /** The gRPC status of one raw call: from trailers (gRPC) or the trailer frame (gRPC-Web). */
    const call = (contentType: string, frame: Buffer): Promise<number> => {
      const session = http2Connect(n.node.url);
      return new Promise<number>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": "/oprc.DataService/SetValue",
          "content-type": contentType,
          te: "trailers",
        });
        let status: string | undefined;
        const chunks: Buffer[] = [];
        req.on("response", (h) => {
          if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
        });
        req.on("trailers", (t) => {
          status = String(t["grpc-status"]);
        });
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          session.close();
          status ??= /grpc-status: ?(\d+)/.exec(Buffer.concat(chunks).toString("latin1"))?.[1];
          resolve(Number(status));
        });
        req.on("error", reject);
        req.end(frame);
      });
    };
    const framed = (msg: number[]): Buffer => {
      const f = Buffer.alloc(5 + msg.length);
      f.writeUInt32BE(msg.length, 1);
      Buffer.from(msg).copy(f, 5);
      return f;
    };
    // Field 1 (cls_id) with a truncated length varint; then a cls_id that is not UTF-8.
    for (const msg of [
      [0x0a, 0xff, 0xff],
      [0x0a, 0x02, 0xc3, 0x28],
    ]) {
      // application/grpc takes the unary fast path; gRPC-Web goes through connect-node.
      for (const type of ["application/grpc", "application/grpc-web+proto"]) {
        expect(await call(type, framed(msg)), `${type} ${msg}`).toBe(Code.InvalidArgument);
      }
    }
    const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
    expect((await data.getValue({ clsId: "default", objectId: 9n, key: 1 })).value).toBeDefined();
    // The same garbage over REST with a protobuf content type is a 4xx.
    const rest = await fetch(`${n.node.url}/api/class/default/0/objects/9/values/1`, {
      method: "PUT",
      headers: { "content-type": "application/x-protobuf" },
      body: Buffer.from([0x0a, 0xff, 0xff]),
    });
    expect(rest.status).toBeLessThan(500);
  });
});

describe("ODGM_ENABLE_GRANULAR_STORAGE", () => {
  it("false dual-writes: the object has versions and a blob; a granular node reads the entries and drops the blob", async () => {
    const dir = await tempDir();
    try {
      const legacy = await startTempNode({ ODGM_ENABLE_GRANULAR_STORAGE: "false" }, dir);
      const d1 = createClient(DataService, createGrpcTransport({ baseUrl: legacy.node.url }));
      await d1.set({
        clsId: "default",
        objectId: 31n,
        object: { entries: { 1: { data: utf8("old") } } },
      });
      await legacy.close();

      const granular = await startTempNode({}, dir);
      try {
        const transport = createGrpcTransport({ baseUrl: granular.node.url });
        const d2 = createClient(DataService, transport);
        const got = await d2.getValue({ clsId: "default", objectId: 31n, key: 1 });
        expect(new TextDecoder().decode(got.value?.data)).toBe("old");
        expect(got.objectVersion).toBe(1n);
        const maintenance = createClient(MaintenanceService, transport);
        const pages = [];
        for await (const page of maintenance.listLegacyObjects({ clsId: "default" }))
          pages.push(...page.objectIds);
        expect(pages).toEqual([31n]);
        let metrics = await (await fetch(`${granular.node.url}/metrics`)).text();
        expect(metrics).not.toMatch(/odgm_blob_fallback_reads_total\{collection="default"\} [1-9]/);
        expect(metrics).toMatch(/odgm_objects_pending_conversion_total\{collection="default"\} 1/);
        // The blob is the dual-write copy: nothing to convert, and it goes.
        const res = await maintenance.convertLegacyObjects({ clsId: "default", objectIds: [31n] });
        expect({ converted: res.converted, skipped: res.skipped }).toEqual({
          converted: 0n,
          skipped: 1n,
        });
        metrics = await (await fetch(`${granular.node.url}/metrics`)).text();
        expect(metrics).toMatch(/odgm_objects_pending_conversion_total\{collection="default"\} 0/);
        expect((await d2.get({ clsId: "default", objectId: 31n })).obj?.entries[1]?.data).toEqual(
          utf8("old"),
        );
      } finally {
        await granular.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// The REST surface's behaviour suite (spec §7). It is target-agnostic: `start` supplies a
// way to send HTTP requests to a REST surface — the gateway over an in-process router
// transport (`app.request`), the gateway standalone in front of a gRPC upstream (real
// HTTP), or a real odgm node — so every implementation is held to the same behaviour.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { ObjDataSchema, ObjMetaSchema, ValDataSchema, ValType } from "@oprc/grpc-api";
import { hashId, partitionOf } from "@oprc/oprc-id";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Sends one HTTP request to the REST surface under test. */
export type RestSend = (
  method: string,
  path: string,
  init?: { body?: RequestInit["body"]; headers?: Record<string, string> },
) => Promise<Response>;

/** A REST surface to test, as returned by {@link RestSuiteOptions.start}. */
export interface RestTarget {
  readonly send: RestSend;
  close(): Promise<void>;
}

/** Options of {@link runRestSuite}. */
export interface RestSuiteOptions {
  /**
   * Starts the surface. It must serve collections `suite` and `order` (partition 0 at least), accept
   * bodies up to {@link REST_SUITE_BODY_LIMIT} bytes and refuse larger ones with 413, and
   * serve Prometheus text on `/metrics` containing {@link REST_SUITE_METRIC}.
   */
  start: () => Promise<RestTarget>;
  /**
   * The backend is the test fixture: it knows the fault classes (`legacy`, `down`, `crash`,
   * `unknown*`), has 4 partitions and the scripted functions. A real node runs without them.
   */
  fixture?: boolean;
  /** Runs of each property test (default 100). */
  propertyRuns?: number;
}

type Send = RestSend;

const te = new TextEncoder();
/** The body limit a target under test must enforce. */
export const REST_SUITE_BODY_LIMIT: number = 64 * 1024;
const BODY_LIMIT = REST_SUITE_BODY_LIMIT;
/** A metric name a target's `/metrics` must contain. */
export const REST_SUITE_METRIC = "odgm_";

/** Registers the suite under `describe(name)`. */
export function runRestSuite(name: string, options: RestSuiteOptions): void {
  describe(name, () => {
    let target: RestTarget | undefined;
    let send: Send;
    let seq = 0;
    const run = Math.random().toString(36).slice(2, 8);
    const uid = (p = "obj") => `${p}-${run}-${++seq}`;
    const cls = "suite";
    const base = `/api/class/${cls}/0`;

    beforeAll(async () => {
      target = await options.start();
      send = target.send;
    });
    afterAll(async () => {
      await target?.close();
    });

    const json = (value: unknown) => ({
      body: JSON.stringify(value),
      headers: { "content-type": "application/json" },
    });
    const expectError = async (res: Response, status: number, code?: string, contains?: string) => {
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(typeof body.error.message).toBe("string");
      expect(body.error.message.length).toBeGreaterThan(0);
      if (code !== undefined) expect(body.error.code).toBe(code);
      if (contains !== undefined) expect(body.error.message).toContain(contains);
      return body.error;
    };
    const healthy = async () => {
      const res = await send("GET", "/healthz");
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };

    describe("seed 000 §C examples", () => {
      it("PUT an object with a string id, PUT a string-keyed value, read both back (§12: GET is not 404)", async () => {
        const obj = `${base.replace(cls, "order")}/objects/ord_2025_09_12345`;
        expect((await send("PUT", obj)).status).toBe(204);
        const put = await send("PUT", `${obj}/values/status`, json({ value: "shipped" }));
        expect(put.status).toBe(204);
        const got = await send("GET", `${obj}/values/status`);
        expect(got.status).toBe(200);
        const body = (await got.json()) as Record<string, unknown>;
        expect(body.value).toBe("shipped");
        expect(body.key).toBe("status");
        const whole = await send("GET", obj);
        expect(whole.status).toBe(200);
        const objJson = (await whole.json()) as {
          metadata: Record<string, unknown>;
          entriesStr: Record<string, { data: string }>;
        };
        expect(objJson.metadata.objectIdStr).toBe("ord_2025_09_12345");
        expect(objJson.entriesStr.status?.data).toBe(base64Encode(te.encode('"shipped"')));
      });
    });

    describe("objects", () => {
      it("numeric ids: 042 and 42 are the same object; 0 is addressable", async () => {
        const n = String(1_000_000 + Math.floor(Math.random() * 1e9));
        expect(
          (
            await send(
              "PUT",
              `${base}/objects/000${n}`,
              json({ entries: { "1": { data: "AQID" } } }),
            )
          ).status,
        ).toBe(204);
        const res = await send("GET", `${base}/objects/${n}`);
        expect(res.status).toBe(200);
        const body = (await res.json()) as {
          metadata: { objectId?: string };
          entries: Record<string, unknown>;
        };
        expect(body.metadata.objectId).toBe(n);
        expect(body.entries["1"]).toEqual({ data: "AQID" });
        expect((await send("PUT", `${base}/objects/0`)).status).toBe(204);
        expect((await send("GET", `${base}/objects/00`)).status).toBe(200);
      });

      it("PUT replaces, GET returns it with an ETag, PATCH merges, DELETE tombstones, PUT revives", async () => {
        const path = `${base}/objects/${uid()}`;
        const first = {
          entries: { "7": { data: "Bw==" } },
          entriesStr: { a: { data: "YQ==" }, b: { data: "Yg==" } },
        };
        expect((await send("PUT", path, json(first))).status).toBe(204);
        let res = await send("GET", path);
        expect(res.status).toBe(200);
        const etag1 = res.headers.get("etag");
        expect(etag1).toMatch(/^"[0-9]+"$/);
        let body = (await res.json()) as {
          entries?: Record<string, unknown>;
          entriesStr?: Record<string, unknown>;
        };
        expect(body.entries).toEqual(first.entries);
        expect(body.entriesStr).toEqual(first.entriesStr);

        // Replace: "b" and 7 disappear.
        expect(
          (await send("PUT", path, json({ entriesStr: { a: { data: "QQ==" } } }))).status,
        ).toBe(204);
        res = await send("GET", path);
        body = (await res.json()) as typeof body;
        expect(body.entries ?? {}).toEqual({});
        expect(body.entriesStr).toEqual({ a: { data: "QQ==" } });
        expect(res.headers.get("etag")).not.toBe(etag1);

        // Merge: keeps "a", adds "c", returns the merged object.
        res = await send("PATCH", path, json({ entriesStr: { c: { data: "Yw==" } } }));
        expect(res.status).toBe(200);
        body = (await res.json()) as typeof body;
        expect(body.entriesStr).toEqual({ a: { data: "QQ==" }, c: { data: "Yw==" } });

        expect((await send("DELETE", path)).status).toBe(204);
        await expectError(await send("GET", path), 404, "not_found");
        expect((await send("DELETE", path)).status).toBe(204);
        // No sticky tombstone (spec §12).
        expect(
          (await send("PUT", path, json({ entriesStr: { z: { data: "eg==" } } }))).status,
        ).toBe(204);
        res = await send("GET", path);
        expect(res.status).toBe(200);
        expect(((await res.json()) as typeof body).entriesStr).toEqual({ z: { data: "eg==" } });
      });

      it("application/x-protobuf in and out", async () => {
        const path = `${base}/objects/${uid()}`;
        const obj = create(ObjDataSchema, {
          entries: { 3: create(ValDataSchema, { data: new Uint8Array([0, 255, 7]) }) },
          entriesStr: {
            crdt: create(ValDataSchema, { data: new Uint8Array([1, 2]), type: ValType.CRDT_MAP }),
          },
        });
        const put = await send("PUT", path, {
          body: toBinary(ObjDataSchema, obj),
          headers: { "content-type": "application/x-protobuf" },
        });
        expect(put.status).toBe(204);
        const res = await send("GET", path, { headers: { accept: "application/x-protobuf" } });
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("application/x-protobuf");
        const back = fromBinary(ObjDataSchema, new Uint8Array(await res.arrayBuffer()));
        expect(back.entries[3]?.data).toEqual(new Uint8Array([0, 255, 7]));
        expect(back.entriesStr.crdt?.type).toBe(ValType.CRDT_MAP);
        expect(back.entriesStr.crdt?.data).toEqual(new Uint8Array([1, 2]));
        const merged = await send("PATCH", path, {
          body: toBinary(
            ObjDataSchema,
            create(ObjDataSchema, {
              entriesStr: { x: create(ValDataSchema, { data: te.encode("1") }) },
            }),
          ),
          headers: { "content-type": "application/x-protobuf", accept: "application/x-protobuf" },
        });
        expect(merged.status).toBe(200);
        expect(
          Object.keys(
            fromBinary(ObjDataSchema, new Uint8Array(await merged.arrayBuffer())).entriesStr,
          ).sort(),
        ).toEqual(["crdt", "x"]);
      });

      it("POST /objects creates with a TID: 201, Location, and the object is readable there", async () => {
        const res = await send(
          "POST",
          `${base}/objects`,
          json({ entriesStr: { k: { data: "dg==" } } }),
        );
        expect(res.status).toBe(201);
        const location = res.headers.get("location");
        const meta = (await res.json()) as { objectIdStr: string; clsId: string };
        expect(meta.objectIdStr).toMatch(/^[2-7a-z]{13}$/);
        expect(meta.clsId).toBe(cls);
        expect(location).toBe(`${base}/objects/${meta.objectIdStr}`);
        const got = await send("GET", location ?? "");
        expect(got.status).toBe(200);
        const second = await send("POST", `${base}/objects`, {
          headers: { accept: "application/x-protobuf" },
        });
        expect(second.status).toBe(201);
        const m2 = fromBinary(ObjMetaSchema, new Uint8Array(await second.arrayBuffer()));
        expect((m2.objectIdStr ?? "") > meta.objectIdStr).toBe(true);
      });

      it("GET /objects lists by prefix with limit and cursor", async () => {
        const prefix = uid("lst");
        for (const i of [3, 1, 2, 5, 4]) {
          expect(
            (
              await send(
                "PUT",
                `${base}/objects/${prefix}-${i}`,
                json({ entriesStr: { a: { data: "" } } }),
              )
            ).status,
          ).toBe(204);
        }
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 5; page++) {
          const q = new URLSearchParams({
            prefix,
            limit: "2",
            ...(cursor === undefined ? {} : { cursor }),
          });
          const res = await send("GET", `${base}/objects?${q}`);
          expect(res.status).toBe(200);
          const body = (await res.json()) as {
            objects: { objectId: string; version: string; entryCount: string }[];
            nextCursor?: string;
          };
          seen.push(...body.objects.map((o) => o.objectId));
          for (const o of body.objects) {
            expect(o.entryCount).toBe("1");
            expect(o.version).toMatch(/^[0-9]+$/);
          }
          cursor = body.nextCursor;
          if (cursor === undefined) break;
          expect(body.objects.length).toBe(2);
        }
        expect(seen).toEqual([1, 2, 3, 4, 5].map((i) => `${prefix}-${i}`));
      });
    });

    describe("values", () => {
      it("JSON {value} round-trips any JSON; GET shows data and value", async () => {
        const obj = `${base}/objects/${uid()}`;
        const samples: unknown[] = [
          "shipped",
          42,
          -1.5,
          true,
          null,
          [1, "x"],
          { nested: { a: [null] } },
          "",
        ];
        for (const [i, value] of samples.entries()) {
          expect((await send("PUT", `${obj}/values/k${i}`, json({ value }))).status).toBe(204);
          const res = await send("GET", `${obj}/values/k${i}`);
          expect(res.status).toBe(200);
          const body = (await res.json()) as Record<string, unknown>;
          expect(body.value).toEqual(value);
          expect(body.type).toBe("VAL_TYPE_BYTE");
          expect(body.data).toBe(base64Encode(te.encode(JSON.stringify(value))));
        }
      });

      it("raw bytes round-trip exactly with application/octet-stream, and as base64 in JSON", async () => {
        const obj = `${base}/objects/${uid()}`;
        const bytes = new Uint8Array([0xff, 0x00, 0xfe, 0x80, 0x41]);
        const put = await send("PUT", `${obj}/values/blob`, {
          body: bytes,
          headers: { "content-type": "application/octet-stream" },
        });
        expect(put.status).toBe(204);
        const raw = await send("GET", `${obj}/values/blob`, {
          headers: { accept: "application/octet-stream" },
        });
        expect(raw.status).toBe(200);
        expect(raw.headers.get("content-type")).toBe("application/octet-stream");
        expect(raw.headers.get("x-oprc-val-type")).toBe("VAL_TYPE_BYTE");
        expect(new Uint8Array(await raw.arrayBuffer())).toEqual(bytes);
        const viaJson = (await (await send("GET", `${obj}/values/blob`)).json()) as Record<
          string,
          unknown
        >;
        expect(viaJson.data).toBe(base64Encode(bytes));
        expect("value" in viaJson).toBe(false);
        // Text that is not JSON stays raw too.
        await send("PUT", `${obj}/values/text`, {
          body: "shipped",
          headers: { "content-type": "application/octet-stream" },
        });
        const t = await send("GET", `${obj}/values/text`, {
          headers: { accept: "application/octet-stream" },
        });
        expect(await t.text()).toBe("shipped");
      });

      it("{data, type} stores CRDT maps; protobuf ValData in and out; type header on raw writes", async () => {
        const obj = `${base}/objects/${uid()}`;
        const put = await send(
          "PUT",
          `${obj}/values/doc`,
          json({ data: "AAEC", type: "VAL_TYPE_CRDT_MAP" }),
        );
        expect(put.status).toBe(204);
        const body = (await (await send("GET", `${obj}/values/doc`)).json()) as Record<
          string,
          unknown
        >;
        expect(body).toMatchObject({ key: "doc", type: "VAL_TYPE_CRDT_MAP", data: "AAEC" });
        const raw = await send("GET", `${obj}/values/doc`, {
          headers: { accept: "application/octet-stream" },
        });
        expect(raw.headers.get("x-oprc-val-type")).toBe("VAL_TYPE_CRDT_MAP");
        await raw.arrayBuffer();

        const vd = create(ValDataSchema, { data: new Uint8Array([9, 8]), type: ValType.CRDT_MAP });
        expect(
          (
            await send("PUT", `${obj}/values/pb`, {
              body: toBinary(ValDataSchema, vd),
              headers: { "content-type": "application/x-protobuf" },
            })
          ).status,
        ).toBe(204);
        const pb = await send("GET", `${obj}/values/pb`, {
          headers: { accept: "application/x-protobuf" },
        });
        const back = fromBinary(ValDataSchema, new Uint8Array(await pb.arrayBuffer()));
        expect(back.type).toBe(ValType.CRDT_MAP);
        expect(back.data).toEqual(new Uint8Array([9, 8]));

        const typed = await send("PUT", `${obj}/values/rawcrdt`, {
          body: new Uint8Array([1]),
          headers: {
            "content-type": "application/octet-stream",
            "x-oprc-val-type": "VAL_TYPE_CRDT_MAP",
          },
        });
        expect(typed.status).toBe(204);
        expect(
          ((await (await send("GET", `${obj}/values/rawcrdt`)).json()) as { type: string }).type,
        ).toBe("VAL_TYPE_CRDT_MAP");
      });

      it("numeric key segments: 007 and 7 are the same entry; missing entries are 404; DELETE is idempotent", async () => {
        const obj = `${base}/objects/${uid()}`;
        expect((await send("PUT", `${obj}/values/007`, json({ value: "seven" }))).status).toBe(204);
        const res = await send("GET", `${obj}/values/7`);
        expect((await res.json()) as { key: string; value: string }).toMatchObject({
          key: "7",
          value: "seven",
        });
        const whole = (await (await send("GET", obj)).json()) as {
          entries: Record<string, unknown>;
        };
        expect(Object.keys(whole.entries)).toEqual(["7"]);
        await expectError(await send("GET", `${obj}/values/missing`), 404, "not_found");
        expect((await send("DELETE", `${obj}/values/7`)).status).toBe(204);
        await expectError(await send("GET", `${obj}/values/7`), 404);
        expect((await send("DELETE", `${obj}/values/7`)).status).toBe(204);
        // A key named "batch" is an ordinary key for GET/PUT/DELETE.
        expect((await send("PUT", `${obj}/values/batch`, json({ value: 1 }))).status).toBe(204);
        expect((await send("GET", `${obj}/values/batch`)).status).toBe(200);
      });

      it("GET …/values lists in storage order with prefix, limit and cursor", async () => {
        const obj = `${base}/objects/${uid()}`;
        const batch = {
          values: {
            "2": { value: 2 },
            "10": { value: 10 },
            "user.b": { value: "b" },
            "user.a": { value: "a" },
            "user.long": { value: "long" },
            other: { value: "o" },
          },
        };
        expect((await send("POST", `${obj}/values/batch`, json(batch))).status).toBe(204);
        const all = (await (await send("GET", `${obj}/values`)).json()) as {
          values: { key: string; version: string; value: unknown }[];
        };
        expect(all.values.map((v) => v.key)).toEqual([
          "2",
          "10",
          "other",
          "user.a",
          "user.b",
          "user.long",
        ]);
        expect(all.values[0]?.value).toBe(2);
        expect(all.values[0]?.version).toMatch(/^[0-9]+$/);
        const keys: string[] = [];
        let cursor: string | undefined;
        for (let i = 0; i < 5; i++) {
          const q = new URLSearchParams({
            prefix: "user.",
            limit: "2",
            ...(cursor === undefined ? {} : { cursor }),
          });
          const page = (await (await send("GET", `${obj}/values?${q}`)).json()) as {
            values: { key: string }[];
            nextCursor?: string;
          };
          keys.push(...page.values.map((v) => v.key));
          cursor = page.nextCursor;
          if (cursor === undefined) break;
        }
        expect(keys).toEqual(["user.a", "user.b", "user.long"]);
      });

      it("batch: values and delete_keys apply atomically; CAS by body or If-Match; 409 writes nothing", async () => {
        const obj = `${base}/objects/${uid()}`;
        expect(
          (
            await send(
              "POST",
              `${obj}/values/batch`,
              json({ values: { a: { value: 1 }, b: { value: 2 } } }),
            )
          ).status,
        ).toBe(204);
        const get = await send("GET", `${obj}/values/a`);
        const etag = get.headers.get("etag") ?? "";
        expect(etag).toMatch(/^"[0-9]+"$/);
        await get.arrayBuffer();
        const version = etag.slice(1, -1);

        const stale = String(BigInt(version) + 5n);
        const conflict = await send(
          "POST",
          `${obj}/values/batch`,
          json({ values: { a: { value: 99 } }, expected_object_version: stale }),
        );
        await expectError(conflict, 409, "conflict");
        expect(
          ((await (await send("GET", `${obj}/values/a`)).json()) as { value: number }).value,
        ).toBe(1);
        await healthy();

        const ok = await send("POST", `${obj}/values/batch`, {
          ...json({ values: { c: { data: "Yw==" } }, delete_keys: ["b"] }),
          headers: { "content-type": "application/json", "if-match": etag },
        });
        expect(ok.status).toBe(204);
        const list = (await (await send("GET", `${obj}/values`)).json()) as {
          values: { key: string }[];
        };
        expect(list.values.map((v) => v.key)).toEqual(["a", "c"]);
        // The old ETag is now stale.
        const again = await send("POST", `${obj}/values/batch`, {
          ...json({ values: { d: { value: 1 } } }),
          headers: { "content-type": "application/json", "if-match": etag },
        });
        await expectError(again, 409);
        // If-Match and the body must agree.
        const disagree = await send("POST", `${obj}/values/batch`, {
          ...json({ values: { d: { value: 1 } }, expectedObjectVersion: "1" }),
          headers: { "content-type": "application/json", "if-match": '"2"' },
        });
        await expectError(disagree, 400, "bad_request");
        // camelCase (proto3 JSON names) is accepted too; version as a number.
        const fresh = (await send("GET", `${obj}/values/a`)).headers.get("etag") ?? "";
        const camel = await send(
          "POST",
          `${obj}/values/batch`,
          json({ deleteKeys: ["c"], expectedObjectVersion: Number(fresh.slice(1, -1)) }),
        );
        expect(camel.status).toBe(204);
      });

      it("If-Match on single-value PUT and DELETE is compare-and-swap", async () => {
        const obj = `${base}/objects/${uid()}`;
        expect((await send("PUT", `${obj}/values/x`, json({ value: 1 }))).status).toBe(204);
        const etag = (await send("GET", `${obj}/values/x`)).headers.get("etag") ?? "";
        const ok = await send("PUT", `${obj}/values/x`, {
          ...json({ value: 2 }),
          headers: { "content-type": "application/json", "if-match": etag },
        });
        expect(ok.status).toBe(204);
        const stale = await send("PUT", `${obj}/values/x`, {
          ...json({ value: 3 }),
          headers: { "content-type": "application/json", "if-match": etag },
        });
        await expectError(stale, 409);
        const del = await send("DELETE", `${obj}/values/x`, { headers: { "if-match": etag } });
        await expectError(del, 409);
        expect(
          ((await (await send("GET", `${obj}/values/x`)).json()) as { value: number }).value,
        ).toBe(2);
        // A missing object has version 0: If-Match "0" creates.
        const created = await send("PUT", `${base}/objects/${uid()}/values/x`, {
          ...json({ value: 1 }),
          headers: { "content-type": "application/json", "if-match": '"0"' },
        });
        expect(created.status).toBe(204);
        await expectError(
          await send("PUT", `${obj}/values/x`, {
            ...json({ value: 1 }),
            headers: { "content-type": "application/json", "if-match": "*" },
          }),
          400,
        );
      });
    });

    describe("service routes", () => {
      it("capabilities, healthz, readyz, metrics, openapi.json", async () => {
        const caps = (await (await send("GET", "/api/capabilities")).json()) as Record<
          string,
          boolean
        >;
        expect(Object.keys(caps).sort()).toEqual([
          "eventPipelineV2",
          "granularEntryStorage",
          "stringEntryKeys",
          "stringIds",
        ]);
        expect(await (await send("GET", "/healthz")).json()).toEqual({ status: "ok" });
        expect((await send("GET", "/readyz")).status).toBe(200);
        const metrics = await send("GET", "/metrics");
        expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
        expect(await metrics.text()).toContain(REST_SUITE_METRIC);
        const doc = (await (await send("GET", "/openapi.json")).json()) as {
          paths: Record<string, Record<string, unknown>>;
        };
        expect(Object.keys(doc.paths["/api/class/{cls}/{pid}/objects/{oid}"] ?? {}).sort()).toEqual(
          ["delete", "get", "patch", "put"],
        );
      });

      it("debug/object-hash normalizes and hashes like oprc-id", async () => {
        const res = await send("GET", "/debug/object-hash/order/0/User-1?partitions=16");
        const body = (await res.json()) as Record<string, unknown>;
        expect(body).toMatchObject({
          objectId: "user-1",
          kind: "string",
          partitions: 16,
          partition: partitionOf("user-1", 16),
        });
        expect(body.hash).toBe(hashId("user-1").toString());
        const numeric = (await (
          await send("GET", "/debug/object-hash/order/0/042")
        ).json()) as Record<string, unknown>;
        expect(numeric).toMatchObject({
          objectId: "42",
          kind: "numeric",
          hash: hashId("42").toString(),
        });
        await expectError(await send("GET", "/debug/object-hash/order/0/x?partitions=0"), 400);
      });
    });

    describe("bad input gets its documented status and the server stays healthy", () => {
      const cases: [string, () => Promise<Response>, number, string?][] = [
        [
          "malformed JSON object body",
          () =>
            send("PUT", `${base}/objects/bad-json`, {
              body: "{",
              headers: { "content-type": "application/json" },
            }),
          400,
          "malformed JSON",
        ],
        [
          "malformed JSON value body",
          () =>
            send("PUT", `${base}/objects/bad-json/values/k`, {
              body: '{"value":',
              headers: { "content-type": "application/json" },
            }),
          400,
        ],
        [
          "wrong types in an ObjData",
          () => send("PUT", `${base}/objects/bad-type`, json({ entries: "nope" })),
          422,
        ],
        [
          "unknown ObjData field",
          () => send("PUT", `${base}/objects/bad-type`, json({ bogus: 1 })),
          422,
        ],
        [
          "value without value or data",
          () => send("PUT", `${base}/objects/o/values/k`, json({ vale: 1 })),
          422,
          "unknown field",
        ],
        [
          "value with both value and data",
          () => send("PUT", `${base}/objects/o/values/k`, json({ value: 1, data: "AA==" })),
          422,
        ],
        [
          "value with bad base64",
          () => send("PUT", `${base}/objects/o/values/k`, json({ data: "***" })),
          422,
          "base64",
        ],
        [
          "value with bad type",
          () => send("PUT", `${base}/objects/o/values/k`, json({ data: "AA==", type: "NOPE" })),
          422,
        ],
        [
          "JSON value given as CRDT",
          () =>
            send(
              "PUT",
              `${base}/objects/o/values/k`,
              json({ value: 1, type: "VAL_TYPE_CRDT_MAP" }),
            ),
          422,
        ],
        [
          "batch with wrong types",
          () => send("POST", `${base}/objects/o/values/batch`, json({ delete_keys: "a" })),
          422,
        ],
        [
          "batch with a bad version",
          () =>
            send("POST", `${base}/objects/o/values/batch`, json({ expected_object_version: "-1" })),
          422,
        ],
        [
          "batch that is an array",
          () => send("POST", `${base}/objects/o/values/batch`, json([1])),
          422,
        ],
        [
          "undecodable protobuf object",
          () =>
            send("PUT", `${base}/objects/o`, {
              body: new Uint8Array([0xff, 0xff, 0xff]),
              headers: { "content-type": "application/x-protobuf" },
            }),
          400,
        ],
        [
          "undecodable protobuf value",
          () =>
            send("PUT", `${base}/objects/o/values/k`, {
              body: new Uint8Array([0x0a, 0x09]),
              headers: { "content-type": "application/x-protobuf" },
            }),
          400,
        ],
        [
          "undecodable protobuf batch",
          () =>
            send("POST", `${base}/objects/o/values/batch`, {
              body: new Uint8Array([0x2a, 0xff]),
              headers: { "content-type": "application/x-protobuf" },
            }),
          400,
        ],
        [
          "unsupported content type on an object",
          () =>
            send("PUT", `${base}/objects/o`, {
              body: "x=1",
              headers: { "content-type": "application/x-www-form-urlencoded" },
            }),
          415,
        ],
        [
          "unsupported content type on a value",
          () =>
            send("PUT", `${base}/objects/o/values/k`, {
              body: "x",
              headers: { "content-type": "text/plain" },
            }),
          415,
        ],
        [
          "missing content type on a value",
          () => send("PUT", `${base}/objects/o/values/k`, { body: new Uint8Array([1]) }),
          415,
          "Content-Type",
        ],
        [
          "missing content type on a batch",
          () => send("POST", `${base}/objects/o/values/batch`, { body: new Uint8Array([1]) }),
          415,
        ],
        [
          "huge body",
          () =>
            send("PUT", `${base}/objects/o/values/k`, {
              body: new Uint8Array(BODY_LIMIT + 1),
              headers: { "content-type": "application/octet-stream" },
            }),
          413,
        ],
        [
          "huge JSON object",
          () =>
            send(
              "PUT",
              `${base}/objects/o`,
              json({ entriesStr: { k: { data: base64Encode(new Uint8Array(BODY_LIMIT)) } } }),
            ),
          413,
        ],
        ["POST on an object", () => send("POST", `${base}/objects/o`), 405],
        [
          "PATCH on a value",
          () => send("PATCH", `${base}/objects/o/values/k`, json({ value: 1 })),
          405,
        ],
        [
          "POST on a value key",
          () => send("POST", `${base}/objects/o/values/k`, json({ value: 1 })),
          405,
        ],
        ["DELETE on the object list", () => send("DELETE", `${base}/objects`), 405],
        ["GET on an invocation", () => send("GET", `${base}/invokes/echo`), 405],
        ["unknown route", () => send("GET", "/api/nothing"), 404],
        [
          "If-Match on a whole-object write",
          () => send("PUT", `${base}/objects/o`, { headers: { "if-match": '"1"' } }),
          501,
        ],
        [
          "Accept that cannot be met",
          () => send("GET", `${base}/objects/seed-none`, { headers: { accept: "text/html" } }),
          406,
        ],
        [
          "invalid character in an id",
          () => send("GET", `${base}/objects/a%20b`),
          400,
          "invalid character",
        ],
        ["encoded slash in an id", () => send("GET", `${base}/objects/a%2Fb`), 400, "/"],
        ["encoded slash in a key", () => send("GET", `${base}/objects/o/values/a%2Fb`), 400],
        [
          "malformed percent-encoding",
          () => send("GET", `${base}/objects/a%ZZb`),
          400,
          "percent-encoding",
        ],
        [
          "percent-encoded invalid UTF-8",
          () => send("GET", `${base}/objects/a%C3`),
          400,
          "percent-encoding",
        ],
        ["too long id", () => send("GET", `${base}/objects/${"a".repeat(161)}`), 400, "160"],
        [
          "too long key",
          () => send("GET", `${base}/objects/o/values/${"k".repeat(161)}`),
          400,
          "160",
        ],
        [
          "partition that is not a number",
          () => send("GET", `/api/class/${cls}/x/objects/o`),
          400,
          "partition",
        ],
        ["partition above int32", () => send("GET", `/api/class/${cls}/4294967295/objects/o`), 400],
        ["bad limit", () => send("GET", `${base}/objects?limit=ten`), 400, "limit"],
        ["bad cursor", () => send("GET", `${base}/objects/o/values?cursor=***`), 400, "cursor"],
      ];
      for (const [title, request, status, contains] of cases) {
        it(`${title} → ${status}`, async () => {
          const res = await request();
          await expectError(res, status, undefined, contains);
          if (status === 405) expect(res.headers.get("allow")).toBeTruthy();
          await healthy();
        });
      }

      it("string ids vs the same numeric object, mixed case normalizes", async () => {
        const id = uid("Mixed");
        expect((await send("PUT", `${base}/objects/${id}`)).status).toBe(204);
        const res = await send("GET", `${base}/objects/${id.toLowerCase()}`);
        expect(res.status).toBe(200);
        expect(
          ((await res.json()) as { metadata: { objectIdStr: string } }).metadata.objectIdStr,
        ).toBe(id.toLowerCase());
      });
    });

    if (options.fixture === true) {
      describe("upstream errors (fixture fault classes)", () => {
        it("unknown partition → 404, unknown class → 404", async () => {
          await expectError(
            await send("GET", `/api/class/${cls}/99/objects/o`),
            404,
            "not_found",
            "partition 99",
          );
          await expectError(await send("GET", "/api/class/unknown-cls/0/objects/o"), 404);
        });
        it("disabled string keys → 501 with the node's message", async () => {
          await expectError(
            await send("PUT", "/api/class/legacy/0/objects/5/values/name", json({ value: 1 })),
            501,
            "not_implemented",
            "disabled",
          );
          expect(
            (await send("PUT", "/api/class/legacy/0/objects/5/values/3", json({ value: 1 })))
              .status,
          ).toBe(204);
        });
        it("unavailable shard → 503 with a fixed message", async () => {
          await expectError(await send("GET", "/api/class/down/0/objects/o"), 503, "unavailable");
        });
        it("an unexpected upstream failure → 500 without internals", async () => {
          const res = await send("GET", "/api/class/crash/0/objects/o");
          const err = await expectError(res, 500, "internal");
          expect(err.message).not.toContain("secret");
          expect(err.message).not.toContain("/var/lib");
          await healthy();
        });
        it("a server-side cursor of another object → 400", async () => {
          const a = `${base}/objects/${uid()}`;
          await send(
            "POST",
            `${a}/values/batch`,
            json({ values: { a: { value: 1 }, b: { value: 2 }, c: { value: 3 } } }),
          );
          const page = (await (await send("GET", `${a}/values?limit=1`)).json()) as {
            nextCursor: string;
          };
          expect(page.nextCursor).toBeTruthy();
          await expectError(
            await send("GET", `${base}/objects/${uid()}/values?cursor=${page.nextCursor}`),
            400,
            "bad_request",
            "cursor",
          );
        });
      });

      describe("invocations (fixture functions)", () => {
        it("OKAY → 200 with the payload and the function's content type; query → options", async () => {
          const res = await send("POST", `${base}/invokes/echo?content-type=text/plain`, {
            body: "hello",
          });
          expect(res.status).toBe(200);
          expect(res.headers.get("content-type")).toBe("text/plain");
          expect(res.headers.get("x-invocation-status")).toBe("OKAY");
          expect(res.headers.get("x-invocation-id")).toBe("inv-echo");
          expect(await res.text()).toBe("hello");
          const obj = await send("POST", `${base}/objects/042/invokes/whoami?a=1`, { body: "" });
          expect(obj.status).toBe(200);
          expect(await obj.json()).toEqual({ objectId: "42", options: { a: "1" } });
        });
        it("INVALID_REQUEST → 400, APP_ERROR → 500, SYSTEM_ERROR → 502, throwing → 500, unknown fn → 404", async () => {
          const bad = await send("POST", `${base}/invokes/bad-request`);
          expect(bad.status).toBe(400);
          expect(await bad.text()).toBe("missing field x");
          const app = await send("POST", `${base}/invokes/app-error`);
          expect(app.status).toBe(500);
          expect(app.headers.get("x-invocation-status")).toBe("APP_ERROR");
          expect(await app.text()).toBe("boom");
          await expectError(await send("POST", `${base}/invokes/app-error-empty`), 500, "internal");
          await expectError(await send("POST", `${base}/invokes/system-error`), 502, "bad_gateway");
          const thrown = await expectError(await send("POST", `${base}/invokes/throw`), 500);
          expect(thrown.message).not.toContain("secret");
          await expectError(await send("POST", `${base}/invokes/nope`), 404);
          await expectError(await send("POST", `${base}/objects/a%2Fb/invokes/echo`), 400);
          await healthy();
        });
      });
    }

    describe("property: id and key segments either round-trip or are a 400", () => {
      const runs = options.propertyRuns ?? 100;
      const segment = fc.oneof(
        fc.string({ minLength: 0, maxLength: 24 }),
        fc.string({ unit: "grapheme", maxLength: 12 }),
        fc.stringMatching(/^[A-Za-z0-9._:-]{1,20}$/),
        fc.constantFrom(
          "..",
          ".",
          "%2F",
          "a/b",
          "%",
          "%zz",
          "Ünïcödé",
          "a b",
          "\u0000",
          "042",
          "18446744073709551616",
          "007",
        ),
      );
      const outcome = async (res: Response) => {
        if (res.status === 400) {
          const body = (await res.json()) as { error: { code: string; message: string } };
          expect(body.error.code).toBe("bad_request");
          expect(body.error.message.length).toBeGreaterThan(3);
          return false;
        }
        return true;
      };

      it("object ids", async () => {
        await fc.assert(
          fc.asyncProperty(segment, async (s) => {
            const enc = encodeURIComponent(s);
            if (s === "" || s === "." || s === "..") {
              // URL syntax: an empty or dot segment never reaches the object route.
              const res = await send("PUT", `${base}/objects/${enc}`);
              expect([400, 404, 405]).toContain(res.status);
              await res.arrayBuffer();
              return;
            }
            const put = await send(
              "PUT",
              `${base}/objects/${enc}`,
              json({ entriesStr: { p: { data: "AQ==" } } }),
            );
            if (!(await outcome(put))) {
              expect((await send("GET", `${base}/objects/${enc}`)).status).toBe(400);
              return;
            }
            expect(put.status).toBe(204);
            const get = await send("GET", `${base}/objects/${enc}`);
            expect(get.status).toBe(200);
            const meta = ((await get.json()) as { metadata: { objectIdStr: string } }).metadata;
            // The normalized id addresses the same object.
            const again = await send(
              "GET",
              `${base}/objects/${encodeURIComponent(meta.objectIdStr)}`,
            );
            expect(again.status).toBe(200);
            await again.arrayBuffer();
            if (/^[0-9]+$/.test(s)) expect(meta.objectIdStr).toBe(BigInt(s).toString());
            else expect(meta.objectIdStr).toBe(s.toLowerCase());
          }),
          { numRuns: runs },
        );
      });

      it("entry keys", async () => {
        const obj = `${base}/objects/${uid("keys")}`;
        await fc.assert(
          fc.asyncProperty(segment, fc.jsonValue(), async (s, value) => {
            const enc = encodeURIComponent(s);
            if (s === "" || s === "." || s === "..") return;
            const put = await send("PUT", `${obj}/values/${enc}`, json({ value }));
            if (!(await outcome(put))) return;
            expect(put.status).toBe(204);
            const get = await send("GET", `${obj}/values/${enc}`);
            expect(get.status).toBe(200);
            const body = (await get.json()) as { key: string; value: unknown };
            expect(body.value).toEqual(JSON.parse(JSON.stringify(value)));
            if (/^[0-9]+$/.test(s) && BigInt(s) <= 0xffffffffn)
              expect(body.key).toBe(BigInt(s).toString());
            else expect(body.key).toBe(s.toLowerCase());
          }),
          { numRuns: runs },
        );
      });
    });
  });
}

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ObjDataSchema, ObjMetaSchema, ValDataSchema, ValType } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { type SuiteContext, utf8 } from "./suite-context.js";

/** Whole objects: ids, bodies, media types, listing. */
export function objectCases(s: SuiteContext): void {
  const { send, uid, cls, base, json, expectError } = s;
  describe("objects", () => {
    it("numeric ids: 042 and 42 are the same object; 0 is addressable", async () => {
      const n = String(1_000_000 + Math.floor(Math.random() * 1e9));
      expect(
        (await send("PUT", `${base}/objects/000${n}`, json({ entries: { "1": { data: "AQID" } } })))
          .status,
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
      expect((await send("PUT", path, json({ entriesStr: { a: { data: "QQ==" } } }))).status).toBe(
        204,
      );
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
      expect((await send("PUT", path, json({ entriesStr: { z: { data: "eg==" } } }))).status).toBe(
        204,
      );
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
            entriesStr: { x: create(ValDataSchema, { data: utf8("1") }) },
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
}

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { ValDataSchema, ValType } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { type SuiteContext, utf8 } from "./suite-context.js";

/** Entries: values in every body type, If-Match, batches, listing. */
export function valueCases(s: SuiteContext): void {
  const { send, uid, base, json, expectError, healthy } = s;
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
        expect(body.data).toBe(base64Encode(utf8(JSON.stringify(value))));
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
}

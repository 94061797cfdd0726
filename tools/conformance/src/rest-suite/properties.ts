import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SuiteContext } from "./suite-context.js";

/** Property tests: id and key segments either round-trip or are a 400. */
export function propertyCases(s: SuiteContext): void {
  const { send, uid, base, json, options } = s;
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
}

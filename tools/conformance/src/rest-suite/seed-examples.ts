import { base64Encode } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { type SuiteContext, utf8 } from "./suite-context.js";

/** The examples of seed 000 §C. */
export function seedExampleCases(s: SuiteContext): void {
  const { send, cls, base, json } = s;
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
      expect(objJson.entriesStr.status?.data).toBe(base64Encode(utf8('"shipped"')));
    });
  });
}

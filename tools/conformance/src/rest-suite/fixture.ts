import { describe, expect, it } from "vitest";
import type { SuiteContext } from "./suite-context.js";

/** Upstream errors and invocations: only against the test fixture backend. */
export function fixtureCases(s: SuiteContext): void {
  const { send, uid, cls, base, json, expectError, healthy, options } = s;
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
          (await send("PUT", "/api/class/legacy/0/objects/5/values/3", json({ value: 1 }))).status,
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
}

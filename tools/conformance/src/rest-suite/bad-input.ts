import { base64Encode } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { BODY_LIMIT, type SuiteContext } from "./suite-context.js";

/** Bad input gets its documented status and the server stays healthy. */
export function badInputCases(s: SuiteContext): void {
  const { send, uid, cls, base, json, expectError, healthy } = s;
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
      ...(
        [
          ["a number beyond a double", '{"value": 1e400}', "1e400"],
          ["an integer above 2^53", '{"value": 9007199254740993}', "9007199254740993"],
          ["more digits than a double holds", '{"value": 0.12345678901234567890}', "exactly"],
          ["nesting 30,000 deep", `{"value": ${"[".repeat(3e4)}${"]".repeat(3e4)}}`, "nested"],
        ] as const
      ).map(([title, body, contains]): [string, () => Promise<Response>, number, string] => [
        `JSON value with ${title}`,
        () =>
          send("PUT", `${base}/objects/bad-json/values/k`, {
            body,
            headers: { "content-type": "application/json" },
          }),
        400,
        contains,
      ]),
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
          send("PUT", `${base}/objects/o/values/k`, json({ value: 1, type: "VAL_TYPE_CRDT_MAP" })),
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
      // Well-formed base64 but no cursor: refused by the store, through every error layer.
      ["short cursor", () => send("GET", `${base}/objects/o/values?cursor=zzzz`), 400, "cursor"],
      ["short object cursor", () => send("GET", `${base}/objects?cursor=zzzz`), 400, "cursor"],
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
}

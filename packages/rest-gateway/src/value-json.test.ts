import { base64Encode } from "@bufbuild/protobuf/wire";
import { ValType } from "@oprc/grpc-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isGatewayError } from "./gateway-error.js";
import { parseValueJson, valueToJson } from "./value-json.js";

describe("value JSON", () => {
  it('{"value": x} stores the JSON text and renders value and data', () => {
    const v = parseValueJson({ value: "shipped" }, "body");
    expect(new TextDecoder().decode(v.data)).toBe('"shipped"');
    expect(v.type).toBe(ValType.BYTE);
    expect(valueToJson(v)).toEqual({
      type: "VAL_TYPE_BYTE",
      data: base64Encode(v.data),
      value: "shipped",
    });
  });

  it("property: any JSON value round-trips through {value}", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const out = valueToJson(parseValueJson({ value }, "body"));
        expect(out.value).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it("property: any bytes round-trip exactly through {data, type}", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.boolean(),
        fc.boolean(),
        (bytes, crdt, urlSafe) => {
          const type = crdt ? "VAL_TYPE_CRDT_MAP" : "VAL_TYPE_BYTE";
          const data = base64Encode(bytes, urlSafe ? "url" : "std");
          const v = parseValueJson({ data, type }, "body");
          expect(v.data).toEqual(bytes);
          const out = valueToJson(v);
          expect(out.data).toBe(base64Encode(bytes));
          expect(out.type).toBe(type);
          if (crdt) expect("value" in out).toBe(false);
        },
      ),
    );
  });

  it("bytes that are not JSON have no value", () => {
    expect(
      "value" in
        valueToJson(
          parseValueJson({ data: base64Encode(new TextEncoder().encode("shipped")) }, "b"),
        ),
    ).toBe(false);
    expect("value" in valueToJson(parseValueJson({ data: "" }, "b"))).toBe(false);
  });

  it.each([
    [null],
    [[1]],
    ["x"],
    [{}],
    [{ value: 1, data: "AA==" }],
    [{ vaule: 1 }],
    [{ data: 5 }],
    [{ data: "A" }],
    [{ data: "!!" }],
    [{ data: "AA==", type: "BYTES" }],
    [{ value: {}, type: 1 }],
  ])("rejects %j as unprocessable", (json) => {
    try {
      parseValueJson(json, "body");
      expect.unreachable();
    } catch (err) {
      expect(isGatewayError(err) && err.code).toBe("unprocessable_entity");
    }
  });
});

import { toBinary } from "@bufbuild/protobuf";
import { ValDataSchema } from "@oprc/grpc-api";
import { GatewayError } from "../gateway-error.js";
import { BINARY_TYPE, JSON_TYPE, negotiate, PROTOBUF_TYPE } from "../media.js";
import { keyRef } from "../path-segments.js";
import {
  cursorField,
  cursorText,
  etag,
  parseIfMatch,
  parseLimit,
  readBatchBody,
  readValueBody,
  VAL_TYPE_HEADER,
} from "../request-parsing.js";
import { valueToJson } from "../value-json.js";
import type { RouteContext } from "./route-context.js";

/** Entries of one object: get, set, delete (each with optional If-Match), list, batch. */
export function bindValueRoutes(ctx: RouteContext): void {
  const { data } = ctx;

  ctx.bind("getValue", async (c) => {
    const { clsId, partitionId, ref, key } = ctx.valueOf(c);
    const type = negotiate(c.req.header("accept"), [JSON_TYPE, BINARY_TYPE, PROTOBUF_TYPE]);
    const res = await data.getValue({ clsId, partitionId, ...ref, ...keyRef(key) }, ctx.call(c));
    const value = res.value;
    if (value === undefined) {
      throw new GatewayError(
        "not_found",
        `entry "${key.key}" not found in object "${ref.objectIdStr ?? ref.objectId}"`,
      );
    }
    const headers: Record<string, string> =
      res.objectVersion === undefined ? {} : { etag: etag(res.objectVersion) };
    if (type === BINARY_TYPE) {
      const typeName =
        value.type === 1
          ? "VAL_TYPE_CRDT_MAP"
          : value.type === 0
            ? "VAL_TYPE_BYTE"
            : String(value.type);
      return new Response(value.data, {
        headers: { "content-type": BINARY_TYPE, [VAL_TYPE_HEADER]: typeName, ...headers },
      });
    }
    if (type === PROTOBUF_TYPE) {
      return new Response(toBinary(ValDataSchema, value), {
        headers: { "content-type": PROTOBUF_TYPE, ...headers },
      });
    }
    const json: Record<string, unknown> = { key: res.key ?? key.key, ...valueToJson(value) };
    if (res.objectVersion !== undefined) json.objectVersion = String(res.objectVersion);
    return c.json(json, 200, headers);
  });

  ctx.bind("setValue", async (c) => {
    const { clsId, partitionId, ref, key } = ctx.valueOf(c);
    const expected = parseIfMatch(c.req.header("if-match"));
    const value = await readValueBody(c);
    if (expected === undefined) {
      await data.setValue({ clsId, partitionId, ...ref, ...keyRef(key), value }, ctx.call(c));
    } else {
      await data.batchSetValues(
        {
          clsId,
          partitionId,
          ...ref,
          values: { [key.key]: value },
          expectedObjectVersion: expected,
        },
        ctx.call(c),
      );
    }
    return c.body(null, 204);
  });

  ctx.bind("deleteValue", async (c) => {
    const { clsId, partitionId, ref, key } = ctx.valueOf(c);
    const expected = parseIfMatch(c.req.header("if-match"));
    if (expected === undefined) {
      await data.deleteValue({ clsId, partitionId, ...ref, ...keyRef(key) }, ctx.call(c));
    } else {
      await data.batchSetValues(
        { clsId, partitionId, ...ref, deleteKeys: [key.key], expectedObjectVersion: expected },
        ctx.call(c),
      );
    }
    return c.body(null, 204);
  });

  ctx.bind("listValues", async (c) => {
    const { clsId, partitionId, ref } = ctx.objectOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE]);
    const prefix = c.req.query("prefix");
    const req = {
      clsId,
      partitionId,
      ...ref,
      limit: parseLimit(c.req.query("limit")),
      ...(prefix === undefined || prefix === "" ? {} : { keyPrefix: prefix }),
      ...cursorField(c.req.query("cursor")),
    };
    const values: Record<string, unknown>[] = [];
    let next: Uint8Array | undefined;
    for await (const env of data.listValues(req, ctx.call(c))) {
      const item: Record<string, unknown> = { key: env.key, version: String(env.version) };
      if (env.value !== undefined) Object.assign(item, valueToJson(env.value));
      values.push(item);
      if (env.nextCursor !== undefined && env.nextCursor.length > 0) next = env.nextCursor;
    }
    return c.json(next === undefined ? { values } : { values, nextCursor: cursorText(next) });
  });

  ctx.bind("batchSetValues", async (c) => {
    const { clsId, partitionId, ref } = ctx.objectOf(c);
    const ifMatch = parseIfMatch(c.req.header("if-match"));
    const batch = await readBatchBody(c);
    if (ifMatch !== undefined && batch.expected !== undefined && ifMatch !== batch.expected) {
      throw new GatewayError(
        "bad_request",
        `If-Match (${ifMatch}) and expected_object_version (${batch.expected}) disagree`,
      );
    }
    const expected = batch.expected ?? ifMatch;
    await data.batchSetValues(
      {
        clsId,
        partitionId,
        ...ref,
        values: batch.values,
        deleteKeys: batch.deleteKeys,
        ...(expected === undefined ? {} : { expectedObjectVersion: expected }),
      },
      ctx.call(c),
    );
    return c.body(null, 204);
  });
}

import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { type ObjData, ObjDataSchema, ObjMetaSchema } from "@oprc/grpc-api";
import type { Context } from "hono";
import { GatewayError } from "../gateway-error.js";
import { JSON_TYPE, negotiate, PROTOBUF_TYPE } from "../media.js";
import { cursorField, cursorText, etag, parseLimit, readObjectBody } from "../request-parsing.js";
import type { RouteContext } from "./route-context.js";

/** Whole objects: get, set, merge, delete, create with a generated id, list. */
export function bindObjectRoutes(ctx: RouteContext): void {
  const { data, tids } = ctx;

  ctx.bind("getObject", async (c) => {
    const { clsId, partitionId, identity, ref } = ctx.objectOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const opts = ctx.call(c);
    // The version is read *before* the object: if a write lands in between, the ETag is
    // older than the data and a CAS based on it fails (safe), never the other way round.
    let version: bigint | undefined;
    for await (const env of data.listObjects(
      { clsId, partitionId, objectIdPrefix: identity.id, limit: 1 },
      opts,
    )) {
      if (env.objectId === identity.id) version = env.version;
    }
    const res = await data.get({ clsId, partitionId, ...ref }, opts);
    const headers: Record<string, string> = version === undefined ? {} : { etag: etag(version) };
    return sendObject(c, res.obj ?? create(ObjDataSchema), 200, headers);
  });

  ctx.bind("setObject", async (c) => {
    const { clsId, partitionId, ref } = ctx.objectOf(c);
    rejectIfMatch(c);
    const object = await readObjectBody(c);
    object.metadata = create(ObjMetaSchema, { clsId, partitionId, ...ref });
    await data.set({ clsId, partitionId, ...ref, object }, ctx.call(c));
    return c.body(null, 204);
  });

  ctx.bind("mergeObject", async (c) => {
    const { clsId, partitionId, ref } = ctx.objectOf(c);
    rejectIfMatch(c);
    negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const object = await readObjectBody(c);
    object.metadata = create(ObjMetaSchema, { clsId, partitionId, ...ref });
    const res = await data.merge({ clsId, partitionId, ...ref, object }, ctx.call(c));
    return sendObject(c, res.obj ?? create(ObjDataSchema), 200, {});
  });

  ctx.bind("deleteObject", async (c) => {
    const { clsId, partitionId, ref } = ctx.objectOf(c);
    rejectIfMatch(c);
    await data.delete({ clsId, partitionId, ...ref }, ctx.call(c));
    return c.body(null, 204);
  });

  ctx.bind("createObject", async (c) => {
    const { segs, clsId, partitionId } = ctx.classOf(c);
    const type = negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
    const object = await readObjectBody(c);
    const id = tids.next();
    const ref = { objectId: 0n, objectIdStr: id };
    const meta = create(ObjMetaSchema, { clsId, partitionId, ...ref });
    object.metadata = meta;
    await data.set({ clsId, partitionId, ...ref, object }, ctx.call(c));
    const location = `/api/class/${segs[3]}/${partitionId}/objects/${id}`;
    if (type === PROTOBUF_TYPE) {
      return new Response(toBinary(ObjMetaSchema, meta), {
        status: 201,
        headers: { "content-type": PROTOBUF_TYPE, location },
      });
    }
    return c.json(toJson(ObjMetaSchema, meta) as object, 201, { location });
  });

  ctx.bind("listObjects", async (c) => {
    const { clsId, partitionId } = ctx.classOf(c);
    negotiate(c.req.header("accept"), [JSON_TYPE]);
    const prefix = c.req.query("prefix");
    const req = {
      clsId,
      partitionId,
      limit: parseLimit(c.req.query("limit")),
      ...(prefix === undefined || prefix === "" ? {} : { objectIdPrefix: prefix }),
      ...cursorField(c.req.query("cursor")),
    };
    const objects: { objectId: string; version: string; entryCount: string }[] = [];
    let next: Uint8Array | undefined;
    for await (const env of data.listObjects(req, ctx.call(c))) {
      objects.push({
        objectId: env.objectId,
        version: String(env.version),
        entryCount: String(env.entryCount),
      });
      if (env.nextCursor !== undefined && env.nextCursor.length > 0) next = env.nextCursor;
    }
    return c.json(next === undefined ? { objects } : { objects, nextCursor: cursorText(next) });
  });
}

function sendObject(
  c: Context,
  obj: ObjData,
  status: 200 | 201,
  headers: Record<string, string>,
): Response {
  const type = negotiate(c.req.header("accept"), [JSON_TYPE, PROTOBUF_TYPE]);
  if (type === PROTOBUF_TYPE) {
    return new Response(toBinary(ObjDataSchema, obj), {
      status,
      headers: { "content-type": PROTOBUF_TYPE, ...headers },
    });
  }
  return c.json(toJson(ObjDataSchema, obj) as object, status, headers);
}

function rejectIfMatch(c: Context): void {
  if (c.req.header("if-match") !== undefined) {
    throw new GatewayError(
      "not_implemented",
      "If-Match is supported on value writes, value deletes and batches, not on whole-object writes",
    );
  }
}

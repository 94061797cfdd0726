import type { Client } from "@connectrpc/connect";
import { type InvocationResponse, type OprcFunction, ResponseStatus } from "@oprc/grpc-api";
import type { Context } from "hono";
import { errorResponse, GatewayError } from "../gateway-error.js";
import { BINARY_TYPE } from "../media.js";
import { parseNameSegment } from "../path-segments.js";
import { readBody } from "../request-parsing.js";
import type { RouteContext } from "./route-context.js";

/** `POST …/invokes/:fn` and `POST …/objects/:oid/invokes/:fn`, onto the function service. */
export function bindInvocationRoutes(ctx: RouteContext): void {
  const needFunctions = (): Client<typeof OprcFunction> => {
    if (ctx.functions === undefined) {
      throw new GatewayError("not_implemented", "invocations are not enabled on this gateway");
    }
    return ctx.functions;
  };

  ctx.bind("invokeFunction", async (c) => {
    const { segs, clsId, partitionId } = ctx.classOf(c);
    const fnId = parseNameSegment(segs[6] ?? "", "function id");
    const fns = needFunctions();
    const payload = await readBody(c);
    const res = await fns.invokeFn(
      { clsId, partitionId, fnId, options: invocationOptions(c), payload },
      ctx.call(c),
    );
    return sendInvocation(res);
  });

  ctx.bind("invokeObjectFunction", async (c) => {
    const { segs, clsId, partitionId, ref } = ctx.objectOf(c);
    const fnId = parseNameSegment(segs[8] ?? "", "function id");
    const fns = needFunctions();
    const payload = await readBody(c);
    const res = await fns.invokeObj(
      { clsId, partitionId, ...ref, fnId, options: invocationOptions(c), payload },
      ctx.call(c),
    );
    return sendInvocation(res);
  });
}

/** Every query parameter becomes an invocation option. */
function invocationOptions(c: Context): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) out[k] = v;
  return out;
}

function sendInvocation(res: InvocationResponse): Response {
  const statusName = ResponseStatus[res.status] ?? String(res.status);
  const status =
    res.status === ResponseStatus.OKAY
      ? 200
      : res.status === ResponseStatus.INVALID_REQUEST
        ? 400
        : res.status === ResponseStatus.APP_ERROR
          ? 500
          : 502;
  const headers: Record<string, string> = { "x-invocation-status": statusName };
  if (res.invocationId !== "") headers["x-invocation-id"] = res.invocationId;
  if (status !== 200 && (res.payload === undefined || res.payload.length === 0)) {
    const code = status === 400 ? "bad_request" : status === 500 ? "internal" : "bad_gateway";
    return errorResponse(new GatewayError(code, `the function answered ${statusName}`), headers);
  }
  let contentType = BINARY_TYPE;
  for (const [k, v] of Object.entries(res.headers)) {
    if (k.toLowerCase() === "content-type") contentType = v;
  }
  headers["content-type"] = contentType;
  return new Response(res.payload ?? new Uint8Array(0), { status, headers });
}

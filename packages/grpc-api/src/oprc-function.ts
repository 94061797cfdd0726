import type { ServiceImpl } from "@connectrpc/connect";
import type { InvocationPlane, InvocationResult } from "./data-plane.js";
import { DataPlaneError } from "./data-plane-error.js";
import type { OprcFunction } from "./gen/oprc-invoke_pb.js";
import { type GrpcApiOptions, resolveGrpcApiOptions } from "./grpc-api-options.js";
import { createErrorMapper, planeCall } from "./handler-support.js";
import { createRequestResolver } from "./request-resolver.js";

/**
 * Creates the `oprc.OprcFunction` handlers (InvokeFn, InvokeObj) over an
 * {@link InvocationPlane}. Identity rules and feature flags are those of
 * {@link createDataServiceImpl}; an application failure is an `InvocationResponse.status`
 * returned by the plane, while a thrown error becomes a gRPC status.
 *
 * @param plane - routes invocations to functions
 * @param options - feature flags and the internal-error log hook (same as DataService)
 *
 * @example
 * ```ts
 * router.service(OprcFunction, createOprcFunctionImpl(plane));
 * ```
 */
export function createOprcFunctionImpl(
  plane: InvocationPlane,
  options: GrpcApiOptions = {},
): ServiceImpl<typeof OprcFunction> {
  const opts = resolveGrpcApiOptions(options);
  const r = createRequestResolver(opts);
  const fail = createErrorMapper(opts);

  const fnId = (fn: string): string => {
    if (fn === "") throw new DataPlaneError("invalid_argument", "fn_id is required");
    return fn;
  };
  const response = (res: InvocationResult) => ({
    ...(res.payload === undefined ? {} : { payload: res.payload }),
    status: res.status,
    headers: { ...res.headers },
    invocationId: res.invocationId ?? "",
  });

  return {
    async invokeFn(req, ctx) {
      try {
        const p = r.partition(req.clsId, req.partitionId);
        const res = await plane.invokeFn(
          { ...p, fn: fnId(req.fnId), options: req.options, payload: req.payload },
          planeCall(ctx),
        );
        return response(res);
      } catch (err) {
        throw fail(err, ctx);
      }
    },
    async invokeObj(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const res = await plane.invokeObj(
          { ...ref, fn: fnId(req.fnId), options: req.options, payload: req.payload },
          planeCall(ctx),
        );
        return response(res);
      } catch (err) {
        throw fail(err, ctx);
      }
    },
  };
}

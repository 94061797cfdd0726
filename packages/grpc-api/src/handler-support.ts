import type { ConnectError, HandlerContext } from "@connectrpc/connect";
import type { DataPlaneCall } from "./data-plane.js";
import type { ResolvedGrpcApiOptions } from "./grpc-api-options.js";
import { toConnectError, WARNING_HEADER } from "./to-connect-error.js";

/** Maps a thrown value to the client-facing error, logging INTERNAL causes. */
export type ErrorMapper = (err: unknown, ctx: HandlerContext) => ConnectError;

/** Creates the {@link ErrorMapper} every handler uses. */
export function createErrorMapper(options: ResolvedGrpcApiOptions): ErrorMapper {
  const { onInternalError } = options;
  return (err, ctx) =>
    toConnectError(err, {
      onInternalError: (cause) => {
        try {
          onInternalError(cause, { procedure: `/${ctx.service.typeName}/${ctx.method.name}` });
        } catch {
          // A failing log hook must not change the answer or crash the server.
        }
      },
    });
}

/** The plane's view of a handler context. */
export function planeCall(ctx: HandlerContext): DataPlaneCall {
  return {
    signal: ctx.signal,
    headers: ctx.requestHeader,
    warn: (message) => ctx.responseHeader.append(WARNING_HEADER, message),
  };
}

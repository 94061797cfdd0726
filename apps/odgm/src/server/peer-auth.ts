// Mutual TLS between cluster nodes: the internal Raft service answers only callers whose
// client certificate the cluster's CA signed. Other services need no certificate (with
// bearer tokens on, auth/authorizer.ts checks them, and trusts authenticated peers).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { TLSSocket } from "node:tls";
import type { Http2StreamHandler } from "./dual-protocol-server.js";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** Paths only cluster peers may call. */
const PEER_ONLY = "/oprc.RaftService/";

/**
 * True when the connection (a request's `socket`, an HTTP/2 stream's `session.socket`)
 * presented a client certificate the server's CA signed.
 */
export function isAuthenticatedPeer(socket: unknown): boolean {
  return (socket as TLSSocket | undefined)?.authorized === true;
}

/**
 * Wraps a stream handler (the gRPC fast path) so that it never takes a call to the internal
 * Raft service without a certificate signed by the cluster's CA: such a call goes on to the
 * request handler, which {@link peersOnly} makes answer UNAUTHENTICATED.
 */
export function peersOnlyStreams(handler: Http2StreamHandler): Http2StreamHandler {
  return (stream, headers) =>
    (!headers[":path"]?.startsWith(PEER_ONLY) || isAuthenticatedPeer(stream.session?.socket)) &&
    handler(stream, headers);
}

/**
 * Wraps `handler` so that a call to the internal Raft service without a certificate signed
 * by the cluster's CA is answered UNAUTHENTICATED (gRPC status 16) and goes no further.
 */
export function peersOnly<Req extends Request, Res extends Response>(
  handler: (req: Req, res: Res) => void,
): (req: Req, res: Res) => void {
  return (req, res) => {
    if (!req.url?.startsWith(PEER_ONLY) || isAuthenticatedPeer(req.socket)) {
      handler(req, res);
      return;
    }
    const socket = req.socket as TLSSocket | undefined;
    const why = socket?.authorizationError ?? "no client certificate";
    const message = `the Raft service is for cluster members: present a client certificate signed by the cluster's CA (${String(why)})`;
    // gRPC trailers-only response; HTTP/1.1 cannot carry gRPC, so it gets a plain 401.
    if (req.httpVersionMajor >= 2) {
      (res as Http2ServerResponse).writeHead(200, {
        "content-type": "application/grpc",
        "grpc-status": "16",
        "grpc-message": encodeURIComponent(message),
      });
    } else {
      (res as ServerResponse).writeHead(401, { "content-type": "text/plain; charset=utf-8" });
      (res as ServerResponse).write(message);
    }
    res.end();
  };
}

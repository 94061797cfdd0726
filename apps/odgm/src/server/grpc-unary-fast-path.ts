import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import {
  type DescMessage,
  type DescService,
  fromBinary,
  type Message,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type Interceptor,
  type StreamResponse,
  type UnaryResponse,
} from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  type CallMethod,
  callServerStreamHandler,
  callUnaryHandler,
  type HandlerCallInit,
  type HandlerFn,
} from "./handler-call.js";
import { IncomingHeaders } from "./incoming-headers.js";

/** One service whose unary methods the fast path serves. */
export interface FastPathService {
  readonly service: DescService;
  /** The `ServiceImpl` of the service (the same handlers Connect runs). */
  readonly impl: object;
  /**
   * Serve its server-streaming methods too (default false). Messages are framed and written
   * in batches: whatever the handler yields before it next waits (a page read from storage,
   * the changes of one commit) leaves in one write, up to 64 KiB.
   */
  readonly streams?: boolean;
}

/** Options of {@link createGrpcUnaryFastPath}. */
export interface GrpcUnaryFastPathOptions {
  readonly services: readonly FastPathService[];
  /** Largest request message (bytes); larger ones are RESOURCE_EXHAUSTED unread. */
  readonly readMaxBytes: number;
  /** Largest response message (bytes); larger ones are RESOURCE_EXHAUSTED. */
  readonly writeMaxBytes: number;
  /**
   * The interceptors of the server pipeline, in the order connect-node applies them (the
   * first is outermost): the same list the Connect handler runs, so whatever is added as
   * an interceptor (metrics, tracing, authentication) runs on both paths.
   */
  readonly interceptors: readonly Interceptor[];
}

/**
 * Serves a request, or returns false to let the Connect adapter serve it. Only plain
 * binary gRPC unary calls (HTTP/2, `application/grpc` or `application/grpc+proto`, no
 * message compression) of the listed services, and server-streaming calls of those with
 * {@link FastPathService.streams}, are taken; everything else — other streams,
 * gRPC-Web, Connect, JSON, compressed messages, other services — goes to Connect.
 */
export type GrpcUnaryFastPath = (req: Http2ServerRequest, res: Http2ServerResponse) => boolean;

interface Route {
  readonly method: CallMethod;
  readonly impl: HandlerFn;
}

const MAX_TIMEOUT_MS = Number.MAX_SAFE_INTEGER;
const CONTENT_TYPE_PROTO = "application/grpc+proto";

function trailerObject(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

/**
 * A gRPC unary fast path beside connect-node: it parses the one length-prefixed message
 * itself, calls the same handler implementations with a lean handler context, and writes
 * the response and status trailers through the HTTP/2 compatibility API, skipping
 * connect's per-call async-iterable pipeline (split, parse, invoke, serialize, join) and
 * its per-call `AbortController` abort, which dominated the CPU profile. Status codes,
 * `grpc-message` encoding, error metadata and deadlines follow connect's gRPC handler
 * (the same `parseTimeout` and `setTrailerStatus`), so clients cannot tell the paths apart.
 */
export function createGrpcUnaryFastPath(options: GrpcUnaryFastPathOptions): GrpcUnaryFastPath {
  const routes = new Map<string, Route>();
  for (const { service, impl, streams: served } of options.services) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      const streams = served === true && method.methodKind === "server_streaming";
      if (method.methodKind !== "unary" && !streams) continue;
      if (typeof fn !== "function") continue;
      routes.set(`/${service.typeName}/${method.name}`, {
        method: method as CallMethod,
        impl: (fn as HandlerFn).bind(impl),
      });
    }
  }
  const { readMaxBytes, writeMaxBytes, interceptors } = options;

  return (req, res) => {
    const route = routes.get(req.url);
    if (route === undefined || req.method !== "POST") return false;
    const contentType = req.headers["content-type"];
    if (contentType !== "application/grpc" && contentType !== CONTENT_TYPE_PROTO) return false;
    const encoding = req.headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    let answered = false;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;

    const finish = (
      body: Uint8Array | undefined,
      error: ConnectError | undefined,
      out?: { header: Headers; trailer: Headers },
    ): void => {
      if (answered) return;
      answered = true;
      if (timer !== undefined) clearTimeout(timer);
      if (res.stream.destroyed || res.stream.closed) return;
      // Headers and trailers a handler or interceptor set travel as on connect's handler.
      const trailer = new Headers(out?.trailer);
      if (error === undefined) trailer.set("grpc-status", "0");
      // setTrailerStatus also carries the error's metadata.
      else setTrailerStatus(trailer, error);
      res.addTrailers(trailerObject(trailer));
      if (!res.headersSent) writeHeader(out?.header);
      if (body === undefined) res.end();
      else res.end(body);
    };
    const writeHeader = (h: Headers | undefined): void => {
      const header = trailerObject(h ?? EMPTY_HEADERS);
      header["content-type"] = CONTENT_TYPE_PROTO;
      res.writeHead(200, header);
    };
    const fail = (err: unknown): void => {
      finish(
        undefined,
        err instanceof ConnectError
          ? err
          : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
      );
    };

    const timeout = parseTimeout(
      (req.headers["grpc-timeout"] as string | null) ?? null,
      MAX_TIMEOUT_MS,
    );
    if (timeout.error !== undefined) {
      req.resume();
      fail(timeout.error);
      return true;
    }
    if (timeout.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        const err = new ConnectError("the operation timed out", Code.DeadlineExceeded);
        controller.abort(err);
        fail(err);
      }, timeout.timeoutMs);
    }
    res.stream.once("close", () => {
      if (!answered) {
        answered = true;
        if (timer !== undefined) clearTimeout(timer);
        controller.abort(new ConnectError("the client went away", Code.Canceled));
      }
    });

    const chunks: Buffer[] = [];
    let received = 0;
    let declared = -1;
    req.on("data", (chunk: Buffer) => {
      if (answered) return;
      received += chunk.length;
      chunks.push(chunk);
      if (declared < 0 && received >= 5) {
        const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
        declared = head.readUInt32BE(1);
        if (declared > readMaxBytes) {
          fail(
            new ConnectError(
              `message size ${declared} is larger than configured readMaxBytes ${readMaxBytes}`,
              Code.ResourceExhausted,
            ),
          );
        }
      }
      if (received > 5 + readMaxBytes + 5) {
        fail(new ConnectError("request body too large", Code.ResourceExhausted));
      }
    });
    req.on("end", () => {
      if (answered) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      if (body.length < 5 || body.length < 5 + body.readUInt32BE(1)) {
        fail(new ConnectError("protocol error: premature end of stream", Code.InvalidArgument));
        return;
      }
      const length = body.readUInt32BE(1);
      if (body.length > 5 + length) {
        fail(
          new ConnectError(
            "protocol error: received extra input message for unary method",
            Code.Unimplemented,
          ),
        );
        return;
      }
      if ((body[0] ?? 0) & 0b1) {
        fail(
          new ConnectError(
            "protocol error: received compressed message without grpc-encoding",
            Code.Internal,
          ),
        );
        return;
      }
      let message: Message;
      try {
        message = fromBinary(route.method.input, body.subarray(5, 5 + length));
      } catch (err) {
        // The client's bytes, not a server fault (as connect-node, patched: see
        // pnpm-workspace.yaml).
        fail(
          new ConnectError(
            `parse binary: ${err instanceof Error ? err.message : String(err)}`,
            Code.InvalidArgument,
          ),
        );
        return;
      }
      if (route.method.methodKind === "server_streaming") {
        const init = callInit(req, controller, timeout.timeoutMs);
        callServerStreamHandler(route.method, route.impl, message, init, interceptors).then(
          (response) => stream(response, route.method.output),
          fail,
        );
        return;
      }
      run(route, message, req, controller, timeout.timeoutMs).then((response) => {
        if (answered) return;
        const out = toBinary(route.method.output, response.message);
        if (out.length > writeMaxBytes) {
          fail(
            new ConnectError(
              `message size ${out.length} is larger than configured writeMaxBytes ${writeMaxBytes}`,
              Code.ResourceExhausted,
            ),
          );
          return;
        }
        finish(frame(out), undefined, response);
      }, fail);
    });
    req.on("error", (err) => {
      controller.abort(err);
      answered = true;
    });

    /**
     * Sends a server stream's messages: framed and written in batches — whatever the handler
     * yields before its next wait leaves in one write (flushed on the next macrotask, so a
     * page of entries or a commit's changes goes together and a trickling watch is not held
     * back), and at most {@link FLUSH_BYTES} wait. When a write is refused (the client reads
     * slowly) the handler is not asked for more until the stream drains. An error after some
     * messages sends them, then the error status, as connect does; the last batch leaves
     * with the trailers.
     */
    async function stream(response: StreamResponse, output: DescMessage): Promise<void> {
      let pending: Uint8Array[] = [];
      let size = 0;
      let scheduled: ReturnType<typeof setImmediate> | undefined;
      let blocked: Promise<void> | undefined;
      const take = (): Uint8Array | undefined => {
        if (size === 0) return undefined;
        const out = Buffer.concat(pending, size);
        pending = [];
        size = 0;
        return out;
      };
      const flush = (): void => {
        scheduled = undefined;
        const out = take();
        if (out === undefined || answered) return;
        if (!res.headersSent) writeHeader(response.header);
        if (!res.write(out)) blocked ??= drained(res);
      };
      try {
        for await (const m of response.message) {
          if (answered) return;
          const out = encodedFrame(output, m);
          if (out.length - 5 > writeMaxBytes) {
            throw new ConnectError(
              `message size ${out.length - 5} is larger than configured writeMaxBytes ${writeMaxBytes}`,
              Code.ResourceExhausted,
            );
          }
          pending.push(out);
          size += out.length;
          if (size >= FLUSH_BYTES) {
            if (scheduled !== undefined) clearImmediate(scheduled);
            flush();
          } else scheduled ??= setImmediate(flush);
          if (blocked !== undefined) {
            await blocked;
            blocked = undefined;
          }
        }
      } catch (err) {
        if (scheduled !== undefined) clearImmediate(scheduled);
        finish(
          take(),
          err instanceof ConnectError
            ? err
            : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
          response,
        );
        return;
      }
      if (scheduled !== undefined) clearImmediate(scheduled);
      finish(take(), undefined, response);
    }
    return true;
  };

  function callInit(
    req: Http2ServerRequest,
    controller: AbortController,
    timeoutMs: number | undefined,
  ): HandlerCallInit {
    return {
      header: new IncomingHeaders(req.headers),
      signal: controller.signal,
      url: `http://${String(req.headers[":authority"] ?? "localhost")}${req.url}`,
      deadline: timeoutMs === undefined ? undefined : Date.now() + timeoutMs,
      protocolName: "grpc",
    };
  }

  /** Runs the call through the interceptors, then the handler, as connect-node does. */
  function run(
    route: Route,
    message: Message,
    req: Http2ServerRequest,
    controller: AbortController,
    timeoutMs: number | undefined,
  ): Promise<UnaryResponse> {
    const init = callInit(req, controller, timeoutMs);
    return callUnaryHandler(route.method, route.impl, message, init, interceptors);
  }
}

const EMPTY_HEADERS = new Headers();
/** A server stream's messages are written once this many framed bytes wait. */
const FLUSH_BYTES = 64 * 1024;

/**
 * Framed encodings of stream messages, by message object: a handler that sends one message
 * object on many streams (a change every watcher of a shard sees) is encoded once. Only
 * for messages that are not changed after they are sent, as stream messages are not.
 */
const framedCache = new WeakMap<object, Uint8Array>();

/** `message` encoded and framed, from the cache when this object was framed before. */
function encodedFrame(desc: DescMessage, message: Message): Uint8Array {
  let out = framedCache.get(message);
  if (out === undefined) {
    out = frame(toBinary(desc, message));
    framedCache.set(message, out);
  }
  return out;
}

/** One gRPC length-prefixed message (not compressed). */
function frame(message: Uint8Array): Uint8Array {
  const framed = new Uint8Array(5 + message.length);
  new DataView(framed.buffer).setUint32(1, message.length);
  framed.set(message, 5);
  return framed;
}

/** Resolves once `res` can take more, or its stream closed. */
function drained(res: Http2ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.stream.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.stream.once("close", done);
  });
}

import {
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
  type ServerStreamResponseOptions,
} from "node:http2";
import { type DescMessage, type DescService, type Message, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  decodeFrame,
  frameMessage,
  GrpcMessageReader,
  type MessageDecoder,
  prematureEnd,
  refuseFrameHeader,
  schemaDecoder,
} from "./grpc-framing.js";
import {
  type CallMethod,
  callClientStreamHandler,
  callServerStreamHandler,
  callUnaryHandler,
  type HandlerCallInit,
  type HandlerFn,
} from "./handler-call.js";
import { IncomingHeaders } from "./lazy-headers.js";

/** One service whose unary methods the fast path serves. */
export interface FastPathService {
  readonly service: DescService;
  /** The `ServiceImpl` of the service (the same handlers Connect runs). */
  readonly impl: object;
  /**
   * Serve its server-streaming and client-streaming methods too (default false). A server
   * stream's messages are framed and written in batches: whatever the handler yields before
   * it next waits (a page read from storage, the changes of one commit) leaves in one write,
   * up to 64 KiB. A client stream's messages reach the handler as they arrive
   * ({@link GrpcMessageReader}); its answer is written once it returns.
   */
  readonly streams?: boolean;
  /**
   * Hand-written readers of request messages, by method `localName`, to use instead of
   * protobuf-es's reflective one on a hot path. Each must read what `fromBinary` reads for
   * the method's input type (the Connect path still uses `fromBinary`). Default: none.
   */
  readonly decoders?: { readonly [method: string]: MessageDecoder } | undefined;
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
  /**
   * Told when an answer could not be sent (Node refused its headers, body or trailers). The
   * stream is then reset with INTERNAL_ERROR, which a gRPC client reports as INTERNAL, and
   * the node goes on serving. Default: none.
   */
  readonly onSendError?: (err: unknown) => void;
}

/**
 * Serves an HTTP/2 stream, or returns false (having touched nothing) to let the Connect
 * adapter serve it. Only plain binary gRPC unary calls (`application/grpc` or
 * `application/grpc+proto`, no message compression) of the listed services, and
 * server- and client-streaming calls of those with {@link FastPathService.streams}, are taken;
 * everything else — other streams, gRPC-Web, Connect, JSON, compressed messages, other
 * services — goes to Connect.
 */
export type GrpcUnaryFastPath = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
) => boolean;

interface Route {
  readonly method: CallMethod;
  readonly impl: HandlerFn;
  readonly decode: MessageDecoder;
}

const MAX_TIMEOUT_MS = Number.MAX_SAFE_INTEGER;
const CONTENT_TYPE_PROTO = "application/grpc+proto";

/** Copies the entries of `h` into `out` (an unset OutgoingHeaders walks nothing). */
function copyHeaders(h: Headers | undefined, out: Record<string, string>): void {
  h?.forEach((v, k) => {
    out[k] = v;
  });
}

/**
 * A gRPC unary fast path beside connect-node, on Node's core HTTP/2 stream API (not the
 * compatibility API's request and response objects): it parses the one length-prefixed
 * message itself, calls the same handler implementations with a lean handler context, and
 * answers with `respond`, the message and the status trailers, skipping connect's per-call
 * async-iterable pipeline (split, parse, invoke, serialize, join) and its per-call
 * `AbortController` abort, which dominated the CPU profile. Status codes, `grpc-message`
 * encoding, error metadata and deadlines follow connect's gRPC handler (the same
 * `parseTimeout` and `setTrailerStatus`), so clients cannot tell the paths apart.
 */
export function createGrpcUnaryFastPath(options: GrpcUnaryFastPathOptions): GrpcUnaryFastPath {
  const routes = new Map<string, Route>();
  for (const { service, impl, streams: served, decoders } of options.services) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      const streams =
        served === true &&
        (method.methodKind === "server_streaming" || method.methodKind === "client_streaming");
      if (method.methodKind !== "unary" && !streams) continue;
      if (typeof fn !== "function") continue;
      routes.set(`/${service.typeName}/${method.name}`, {
        method: method as CallMethod,
        impl: (fn as HandlerFn).bind(impl),
        decode: decoders?.[method.localName] ?? schemaDecoder(method.input),
      });
    }
  }
  const { readMaxBytes, writeMaxBytes, interceptors, onSendError } = options;
  const respond = createResponder();

  return (stream, headers) => {
    const path = headers[":path"];
    const route = path === undefined ? undefined : routes.get(path);
    if (route === undefined || headers[":method"] !== "POST") return false;
    const contentType = headers["content-type"];
    if (contentType !== "application/grpc" && contentType !== CONTENT_TYPE_PROTO) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    let answered = false;
    let headersSent = false;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    /** Gone: closed, reset or failed (nothing more can be sent). */
    const gone = (): boolean => stream.destroyed || stream.closed;
    /** Sending the answer failed: reset the stream and say so, never throw. */
    const abandon = (err: unknown): void => {
      answered = true;
      if (timer !== undefined) clearTimeout(timer);
      onSendError?.(err);
      if (!stream.destroyed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    };

    /** Sends the response headers (once); `waitForTrailers`: the status follows the body. */
    const writeHeader = (h: Headers | undefined): void => {
      headersSent = true;
      // Node's flat list form: no copy of an object into a prototype-less one per call.
      const header = [":status", "200", "content-type", CONTENT_TYPE_PROTO];
      h?.forEach((v, k) => {
        if (k !== "content-type") header.push(k, v);
      });
      respond(stream, header, { waitForTrailers: true });
    };
    const finish = (
      body: Uint8Array | undefined,
      error: ConnectError | undefined,
      out?: { header: Headers; trailer: Headers },
    ): void => {
      if (answered) return;
      answered = true;
      if (timer !== undefined) clearTimeout(timer);
      if (gone()) return;
      // Headers and trailers a handler or interceptor set travel as on connect's handler.
      const trailer: Record<string, string> = {};
      if (error === undefined) {
        copyHeaders(out?.trailer, trailer);
        trailer["grpc-status"] = "0";
      } else {
        // setTrailerStatus also carries the error's metadata.
        const h = new Headers(out?.trailer);
        setTrailerStatus(h, error);
        copyHeaders(h, trailer);
      }
      try {
        if (!headersSent) writeHeader(out?.header);
        stream.once("wantTrailers", () => {
          try {
            stream.sendTrailers(trailer);
          } catch (err) {
            abandon(err);
          }
        });
        if (body === undefined) stream.end();
        else stream.end(body);
      } catch (err) {
        abandon(err);
      }
    };
    const fail = (err: unknown): void => {
      finish(
        undefined,
        err instanceof ConnectError
          ? err
          : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
      );
    };

    // A reset or a failed write of this stream: nothing more to send, the handler may stop.
    stream.on("error", (err) => {
      answered = true;
      if (timer !== undefined) clearTimeout(timer);
      controller.abort(err);
    });
    const timeout = parseTimeout(
      (headers["grpc-timeout"] as string | undefined) ?? null,
      MAX_TIMEOUT_MS,
    );
    if (timeout.error !== undefined) {
      stream.resume();
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
    stream.once("close", () => {
      if (!answered) {
        answered = true;
        if (timer !== undefined) clearTimeout(timer);
        controller.abort(new ConnectError("the client went away", Code.Canceled));
      }
    });

    if (route.method.methodKind === "client_streaming") {
      // The handler reads the messages as they come; its one answer goes out like a stream's.
      const messages = new GrpcMessageReader(stream, route.decode, readMaxBytes, fail);
      const init = callInit(headers, controller, timeout.timeoutMs);
      callClientStreamHandler(route.method, route.impl, messages, init, interceptors)
        .then((response) => sendStream(response, route.method.output))
        .catch(fail);
      return true;
    }

    const chunks: Buffer[] = [];
    let received = 0;
    let headerChecked = false;
    stream.on("data", (chunk: Buffer) => {
      if (answered) return;
      received += chunk.length;
      chunks.push(chunk);
      if (!headerChecked && received >= 5) {
        headerChecked = true;
        const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
        const refused = refuseFrameHeader(head, readMaxBytes);
        if (refused !== undefined) fail(refused);
      }
      if (received > 5 + readMaxBytes + 5) {
        fail(new ConnectError("request body too large", Code.ResourceExhausted));
      }
    });
    stream.on("end", () => {
      if (answered) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      if (body.length < 5 || body.length < 5 + body.readUInt32BE(1)) {
        fail(prematureEnd());
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
      let message: Message;
      try {
        message = decodeFrame(route.decode, body.subarray(5, 5 + length));
      } catch (err) {
        fail(err);
        return;
      }
      const init = callInit(headers, controller, timeout.timeoutMs);
      if (route.method.methodKind === "server_streaming") {
        callServerStreamHandler(route.method, route.impl, message, init, interceptors)
          .then((response) => sendStream(response, route.method.output))
          .catch(fail);
        return;
      }
      callUnaryHandler(route.method, route.impl, message, init, interceptors)
        .then((response) => {
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
          finish(frameMessage(out), undefined, response);
        })
        // The handler's error, or a response that cannot be encoded (a handler's bug):
        // INTERNAL unless it is a ConnectError, never an unhandled rejection.
        .catch(fail);
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
    async function sendStream(response: StreamResponse, output: DescMessage): Promise<void> {
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
        if (out === undefined || answered || gone()) return;
        try {
          if (!headersSent) writeHeader(response.header);
          if (!stream.write(out)) blocked ??= drained(stream);
        } catch (err) {
          abandon(err);
        }
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
    headers: IncomingHttpHeaders,
    controller: AbortController,
    timeoutMs: number | undefined,
  ): HandlerCallInit {
    return {
      header: new IncomingHeaders(headers),
      signal: controller.signal,
      url: `http://${String(headers[":authority"] ?? "localhost")}${headers[":path"]}`,
      deadline: timeoutMs === undefined ? undefined : Date.now() + timeoutMs,
      protocolName: "grpc",
    };
  }
}

type Respond = (
  stream: ServerHttp2Stream,
  headers: string[],
  options: ServerStreamResponseOptions,
) => void;

/**
 * `stream.respond` with response headers as Node's flat list (`[name, value, …]`), which
 * spares Node a copy of a header object per call. Node takes that form only since
 * nodejs/node#59455 (22.23 does; 22.19, the oldest Node `engines` allows, does not), and
 * older versions refuse it with ERR_INVALID_ARG_TYPE before sending anything. The first
 * such refusal switches this responder to header objects for good.
 */
function createResponder(): Respond {
  let flat = true;
  return (stream, headers, options) => {
    if (flat) {
      try {
        stream.respond(headers, options);
        return;
      } catch (err) {
        if ((err as { code?: unknown }).code !== "ERR_INVALID_ARG_TYPE") throw err;
        flat = false;
      }
    }
    const object: OutgoingHttpHeaders = {};
    for (let i = 0; i + 1 < headers.length; i += 2) {
      object[headers[i] as string] = headers[i + 1];
    }
    stream.respond(object, options);
  };
}

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
    out = frameMessage(toBinary(desc, message));
    framedCache.set(message, out);
  }
  return out;
}

/** Resolves once `stream` can take more, or closed. */
function drained(stream: ServerHttp2Stream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("close", done);
  });
}

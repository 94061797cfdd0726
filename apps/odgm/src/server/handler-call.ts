// Runs one call of a `ServiceImpl` method the way connect-node does — the pipeline's
// interceptors first (the first outermost), then the handler with a handler context — but
// without connect's per-call async-iterable pipeline. The gRPC unary fast path and the
// in-process client (REST, Zenoh) both call handlers through here, so an interceptor
// (metrics, tracing, authentication) sees every call whatever path it came by.
import {
  create,
  type DescMessage,
  type DescMethod,
  isMessage,
  type Message,
} from "@bufbuild/protobuf";
import {
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { OutgoingHeaders } from "./lazy-headers.js";

/** A handler method as `ServiceImpl` has it. */
export type HandlerFn = (request: never, context: HandlerContext) => unknown;

/** A method with its descriptors resolved. */
export type CallMethod = DescMethod & { input: DescMessage; output: DescMessage };

/** What the transport knows about one call. */
export interface HandlerCallInit {
  /** Request headers (gRPC metadata). */
  readonly header: Headers;
  /** Aborted when the caller goes away or the deadline passes. */
  readonly signal: AbortSignal;
  /** The request URL, as connect's handler context has it. */
  readonly url: string;
  /** Absolute deadline (ms since the epoch), when the call has one. */
  readonly deadline: number | undefined;
  /** `grpc` on the fast path, `in-process` for the in-process client. */
  readonly protocolName: string;
}

/** Wraps `handler` in `interceptors`, connect's order: the first interceptor is the outermost. */
function intercept<Fn>(interceptors: readonly Interceptor[], handler: Fn): Fn {
  let next = handler;
  for (let i = interceptors.length - 1; i >= 0; i--) {
    next = (interceptors[i] as Interceptor)(next as never) as Fn;
  }
  return next;
}

function handlerContext(
  method: CallMethod,
  init: HandlerCallInit,
  r: { url: string; signal: AbortSignal; header: Headers; contextValues: HandlerContext["values"] },
): HandlerContext {
  const { deadline } = init;
  return {
    method,
    service: method.parent,
    requestMethod: "POST",
    protocolName: init.protocolName,
    url: r.url,
    signal: r.signal,
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    requestHeader: r.header,
    responseHeader: new OutgoingHeaders(),
    responseTrailer: new OutgoingHeaders(),
    values: r.contextValues,
  } as unknown as HandlerContext;
}

function toOutput(method: CallMethod, result: unknown): Message {
  return isMessage(result, method.output)
    ? result
    : create(method.output, result as Parameters<typeof create>[1]);
}

/** Calls a unary handler through the interceptors. */
export function callUnaryHandler(
  method: CallMethod,
  fn: HandlerFn,
  message: Message,
  init: HandlerCallInit,
  interceptors: readonly Interceptor[],
): Promise<UnaryResponse> {
  const request: UnaryRequest = {
    stream: false,
    service: method.parent,
    method: method as UnaryRequest["method"],
    requestMethod: "POST",
    url: init.url,
    signal: init.signal,
    header: init.header,
    contextValues: createContextValues(),
    message,
  };
  const handler = async (r: UnaryRequest): Promise<UnaryResponse> => {
    const context = handlerContext(method, init, r);
    const result = await fn(r.message as never, context);
    return {
      stream: false,
      service: method.parent,
      method: r.method,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      message: toOutput(method, result),
    };
  };
  return intercept(interceptors, handler)(request);
}

/**
 * Runs a stream call through the interceptors: they see the request messages as an async
 * iterable and the answer as a stream, whichever side streams (connect's server does the
 * same). `run` turns the (possibly replaced) request stream into the answer's messages.
 */
function callStream(
  method: CallMethod,
  init: HandlerCallInit,
  messages: AsyncIterable<Message>,
  interceptors: readonly Interceptor[],
  run: (input: AsyncIterable<unknown>, context: HandlerContext) => Promise<AsyncIterable<Message>>,
): Promise<StreamResponse> {
  const request: StreamRequest = {
    stream: true,
    service: method.parent,
    method: method as StreamRequest["method"],
    requestMethod: "POST",
    url: init.url,
    signal: init.signal,
    header: init.header,
    contextValues: createContextValues(),
    message: messages,
  };
  const handler = async (r: StreamRequest): Promise<StreamResponse> => {
    const context = handlerContext(method, init, r);
    const message = await run(r.message, context);
    return {
      stream: true,
      service: method.parent,
      method: r.method,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      message,
    };
  };
  return intercept(interceptors, handler)(request);
}

/** Calls a server-streaming handler through the interceptors. */
export function callServerStreamHandler(
  method: CallMethod,
  fn: HandlerFn,
  message: Message,
  init: HandlerCallInit,
  interceptors: readonly Interceptor[],
): Promise<StreamResponse> {
  return callStream(method, init, single(message), interceptors, async (input, context) => {
    // An interceptor may replace the request stream; the handler takes its one message.
    let first: Message | undefined;
    for await (const m of input) first ??= m as Message;
    const out = fn((first ?? message) as never, context) as AsyncIterable<unknown>;
    return mapOutput(method, out);
  });
}

/** Calls a client-streaming handler (the request messages as they arrive, one answer). */
export function callClientStreamHandler(
  method: CallMethod,
  fn: HandlerFn,
  messages: AsyncIterable<Message>,
  init: HandlerCallInit,
  interceptors: readonly Interceptor[],
): Promise<StreamResponse> {
  return callStream(method, init, messages, interceptors, async (input, context) =>
    single(toOutput(method, await fn(input as never, context))),
  );
}

async function* single(message: Message): AsyncIterable<Message> {
  yield message;
}

async function* mapOutput(method: CallMethod, out: AsyncIterable<unknown>): AsyncIterable<Message> {
  for await (const item of out) yield toOutput(method, item);
}

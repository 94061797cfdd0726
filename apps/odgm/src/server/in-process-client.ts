// A Connect `Client` whose calls run the node's handlers directly, in process: no encode, no
// decode, no router transport. REST and Zenoh reach the data plane through it, through the
// same handlers (validation, flags, error mapping) and interceptors as gRPC.
import { create, type DescService, isMessage, type Message } from "@bufbuild/protobuf";
import {
  type CallOptions,
  type Client,
  Code,
  ConnectError,
  type Interceptor,
} from "@connectrpc/connect";
import {
  type CallMethod,
  callServerStreamHandler,
  callUnaryHandler,
  type HandlerCallInit,
  type HandlerFn,
} from "./handler-call.js";

/** The URL handlers see for in-process calls (`in-process://odgm/<service>/<method>`). */
const URL_BASE = "in-process://odgm";

/** One call's abort signal and deadline, from the caller's options. */
interface OpenCall {
  readonly init: HandlerCallInit;
  /** Rejects with DEADLINE_EXCEEDED or CANCELED when the call ends early; never resolves. */
  readonly ended: Promise<never>;
  /** Releases the timer and the listener. */
  close(): void;
}

function openCall(method: CallMethod, options: CallOptions): OpenCall {
  const controller = new AbortController();
  let fail: (err: ConnectError) => void = () => {};
  const ended = new Promise<never>((_, reject) => {
    fail = reject;
  });
  // Unobserved when the call finishes first.
  ended.catch(() => {});
  const end = (err: ConnectError): void => {
    fail(err);
    controller.abort(err);
  };
  const timeoutMs = options.timeoutMs;
  const timer =
    timeoutMs === undefined || timeoutMs <= 0
      ? undefined
      : setTimeout(
          () => end(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
          timeoutMs,
        );
  const outer = options.signal;
  const onAbort = (): void => end(ConnectError.from(outer?.reason, Code.Canceled));
  if (outer?.aborted) onAbort();
  else outer?.addEventListener("abort", onAbort, { once: true });
  return {
    init: {
      header: new Headers(options.headers),
      signal: controller.signal,
      url: `${URL_BASE}/${method.parent.typeName}/${method.name}`,
      deadline: timer === undefined ? undefined : Date.now() + (timeoutMs as number),
      protocolName: "in-process",
    },
    ended,
    close() {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    },
  };
}

function input(method: CallMethod, request: unknown): Message {
  return isMessage(request, method.input)
    ? request
    : create(method.input, request as Parameters<typeof create>[1]);
}

/**
 * Creates a client of `service` that calls `impl` in process through `interceptors` (the
 * first outermost, as on the server). Unary and server-streaming methods are supported —
 * all DataService and OprcFunction have; other kinds answer UNIMPLEMENTED. Deadlines
 * (`timeoutMs`) answer DEADLINE_EXCEEDED and an aborted `signal` CANCELED, as a remote
 * client's would; errors are ConnectErrors with the handler's code, message and metadata.
 *
 * @example
 * ```ts
 * const data = createInProcessClient(DataService, createDataServiceImpl(plane), []);
 * const res = await data.getValue({ clsId: "c", objectIdStr: "o", keyStr: "k" });
 * ```
 */
export function createInProcessClient<S extends DescService>(
  service: S,
  impl: object,
  interceptors: readonly Interceptor[],
): Client<S> {
  const client: Record<string, unknown> = {};
  for (const m of service.methods) {
    const method = m as CallMethod;
    const found = (impl as Record<string, unknown>)[method.localName];
    const fn: HandlerFn =
      typeof found === "function"
        ? (found as HandlerFn).bind(impl)
        : () => {
            throw new ConnectError(
              `${service.typeName}.${method.name} is not implemented`,
              Code.Unimplemented,
            );
          };
    if (method.methodKind === "unary") {
      client[method.localName] = async (request: unknown, options: CallOptions = {}) => {
        const call = openCall(method, options);
        try {
          const res = await Promise.race([
            callUnaryHandler(method, fn, input(method, request), call.init, interceptors),
            call.ended,
          ]);
          options.onHeader?.(res.header);
          options.onTrailer?.(res.trailer);
          return res.message;
        } catch (err) {
          throw ConnectError.from(err);
        } finally {
          call.close();
        }
      };
    } else if (method.methodKind === "server_streaming") {
      client[method.localName] = (request: unknown, options: CallOptions = {}) =>
        streamCall(method, fn, input(method, request), options, interceptors);
    } else {
      client[method.localName] = () => {
        throw new ConnectError(
          `${service.typeName}.${method.name}: only unary and server-streaming methods run in process`,
          Code.Unimplemented,
        );
      };
    }
  }
  return client as Client<S>;
}

async function* streamCall(
  method: CallMethod,
  fn: HandlerFn,
  message: Message,
  options: CallOptions,
  interceptors: readonly Interceptor[],
): AsyncIterable<Message> {
  const call = openCall(method, options);
  try {
    const res = await Promise.race([
      callServerStreamHandler(method, fn, message, call.init, interceptors),
      call.ended,
    ]);
    options.onHeader?.(res.header);
    const it = res.message[Symbol.asyncIterator]();
    let finished = false;
    try {
      for (;;) {
        const next = await Promise.race([it.next(), call.ended]);
        if (next.done === true) break;
        yield next.value as Message;
      }
      finished = true;
    } finally {
      // Stop the handler's stream when the caller stopped early or the call ended; not
      // awaited, since a handler stuck in a read would hold the caller too.
      if (!finished) void Promise.resolve(it.return?.()).catch(() => {});
    }
    options.onTrailer?.(res.trailer);
  } catch (err) {
    throw ConnectError.from(err);
  } finally {
    call.close();
  }
}

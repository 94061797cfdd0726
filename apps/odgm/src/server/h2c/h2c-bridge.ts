// The lean engine's way to everything it does not serve itself: a stream the gRPC fast path
// does not take (Health, gRPC-Web, Connect, REST over h2c, compressed messages) is passed,
// headers, body, trailers and resets, to Node's own HTTP/2 server over an in-process
// connection, where the compatibility API and connect-node serve it as before.
import http2, {
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";
import { type Duplex, duplexPair } from "node:stream";
import { ErrorCode } from "./h2-frames.js";
import type { H2cStream } from "./h2c-stream.js";

/** Passes streams to a Node HTTP/2 server in process; see the file comment. */
export class NodeBridge {
  readonly #connect: (socket: Duplex) => void;
  #client: ClientHttp2Session | undefined;
  #closed = false;

  /** `connect`: hands one end of an in-process connection to Node's HTTP/2 server. */
  constructor(connect: (socket: Duplex) => void) {
    this.#connect = connect;
  }

  /** Serves `stream` (whose request headers are `raw`) through the Node server. */
  forward(stream: H2cStream, raw: readonly string[]): void {
    const client = this.#session();
    if (client === undefined) {
      stream.close(ErrorCode.REFUSED_STREAM);
      return;
    }
    const headers: OutgoingHttpHeaders = {};
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i] as string;
      const value = raw[i + 1] as string;
      const seen = headers[name];
      if (seen === undefined) headers[name] = value;
      else headers[name] = Array.isArray(seen) ? [...seen, value] : [String(seen), value];
    }
    const req = client.request(headers, { endStream: false });
    let trailers: IncomingHttpHeaders | undefined;
    req.on("error", () => {});
    stream.on("error", () => {});
    // Node may emit a body chunk before the final response's "response" event (after a
    // 100 Continue): what comes early waits for the headers.
    let responded = false;
    let early: Buffer[] | undefined;
    let ended = false;
    const send = (chunk: Buffer): void => {
      if (stream.closed) return;
      if (!stream.write(chunk)) {
        req.pause();
        stream.once("drain", () => req.resume());
      }
    };
    req.on("response", (h: IncomingHttpHeaders, flags: number) => {
      if (stream.closed) return;
      const endStream = (flags & 0x1) !== 0;
      stream.respond(h, { endStream, waitForTrailers: !endStream });
      responded = true;
      for (const chunk of early ?? []) send(chunk);
      early = undefined;
      if (ended && !endStream) stream.end();
    });
    // Informational answers (1xx, 100 Continue included: Node also says "continue" for it).
    req.on("headers", (h: IncomingHttpHeaders) => stream.additionalHeaders(h));
    req.on("trailers", (t: IncomingHttpHeaders) => {
      trailers = t;
    });
    stream.on("wantTrailers", () => stream.sendTrailers(trailers ?? []));
    req.on("data", (chunk: Buffer) => {
      if (responded) send(chunk);
      else if (early === undefined) early = [chunk];
      else early.push(chunk);
    });
    req.on("end", () => {
      if (!responded) ended = true;
      else if (!stream.closed) stream.end();
    });
    req.on("close", () => {
      if (stream.closed) return;
      const code = req.rstCode ?? ErrorCode.NO_ERROR;
      if (!stream.headersSent || code !== ErrorCode.NO_ERROR) {
        stream.close(code === ErrorCode.NO_ERROR ? ErrorCode.INTERNAL_ERROR : code);
      }
    });
    stream.on("data", (chunk: Buffer) => {
      if (!req.write(chunk)) {
        stream.pause();
        req.once("drain", () => stream.resume());
      }
    });
    stream.on("end", () => req.end());
    stream.on("close", () => {
      if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
    });
  }

  /** No new streams; those open finish (`destroy` ends them). */
  close(): void {
    this.#closed = true;
    this.#client?.close();
  }

  /** Ends the in-process connection at once. */
  destroy(): void {
    this.#closed = true;
    this.#client?.destroy();
    this.#client = undefined;
  }

  #session(): ClientHttp2Session | undefined {
    if (this.#closed) return undefined;
    const open = this.#client;
    if (open !== undefined && !open.closed && !open.destroyed) return open;
    const [mine, theirs] = duplexPair();
    this.#connect(theirs);
    const client = http2.connect("http://localhost", {
      createConnection: () => mine,
      settings: { initialWindowSize: 1024 * 1024 },
    });
    client.on("error", () => {});
    client.on("close", () => {
      if (this.#client === client) this.#client = undefined;
    });
    // Node's server closes a session idle for its timeout; the next stream opens another.
    client.on("goaway", () => {
      if (this.#client === client) this.#client = undefined;
    });
    this.#client = client;
    return client;
  }
}

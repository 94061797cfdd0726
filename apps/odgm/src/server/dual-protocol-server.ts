import http, { type IncomingMessage, type ServerResponse } from "node:http";
import http2, {
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import tls, { type TLSSocket } from "node:tls";
import { CLIENT_PREFACE as PREFACE } from "./h2c/h2-frames.js";
import { NodeBridge } from "./h2c/h2c-bridge.js";
import { H2cConnection } from "./h2c/h2c-connection.js";

/** A request handler that serves both HTTP/1.1 and HTTP/2 (compatibility API) requests. */
export type DualRequestHandler = (
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
) => void;

/**
 * Serves an HTTP/2 stream on Node's core API, or returns false (having touched nothing) to
 * leave it to the {@link DualRequestHandler} (through the compatibility API).
 */
export type Http2StreamHandler = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
) => boolean;

/** Options of {@link createDualProtocolServer}. */
export interface DualProtocolServerOptions {
  /** Handles every request, whichever protocol it came in on (but those `streamHandler` takes). */
  readonly handler: DualRequestHandler;
  /**
   * Offered every HTTP/2 stream first: what it takes skips the compatibility API's request
   * and response objects (the gRPC fast path).
   */
  readonly streamHandler?: Http2StreamHandler;
  /** Address to bind. */
  readonly host: string;
  /** Port to bind; 0 picks a free one. */
  readonly port: number;
  /**
   * Connections that send nothing for this long are closed: before the protocol is known,
   * and HTTP/2 sessions without traffic (gracefully, after their open streams; a session
   * that does not answer a ping within `pingTimeoutMs` then is destroyed). Default 60 s.
   */
  readonly idleTimeoutMs?: number;
  /** An HTTP/1.1 request's headers must arrive within this time (slowloris). Default 10 s. */
  readonly headersTimeoutMs?: number;
  /** How long a ping answer may take before a silent HTTP/2 session is destroyed. Default 10 s. */
  readonly pingTimeoutMs?: number;
  /** Open connections at most; more are refused (closed at once). Default unlimited. */
  readonly maxConnections?: number;
  /** Called for socket and session errors (never thrown). */
  readonly onError?: (err: Error) => void;
  /**
   * HTTP/2 streams one connection may have open at once, advertised in SETTINGS so clients
   * queue the rest. Default {@link DEFAULT_MAX_CONCURRENT_STREAMS}.
   */
  readonly maxConcurrentStreams?: number;
  /**
   * Requests that never end by themselves (the Raft stream a peer keeps open), by path:
   * {@link DualProtocolServer.requestsDone} does not wait for them.
   */
  readonly longLived?: (path: string) => boolean;
  /**
   * What serves cleartext HTTP/2 (h2c): `"lean"` (default), odgm's own engine, which
   * parses frames in JavaScript and hands `streamHandler` every stream, passing the rest
   * to Node's HTTP/2 server in process; or `"node"`, Node's HTTP/2 server for every
   * stream. TLS connections, and every connection when there is no `streamHandler`, are
   * always Node's.
   */
  readonly h2cEngine?: "lean" | "node";
  /**
   * Serve TLS instead of cleartext: HTTP/2 and HTTP/1.1 on the same port, chosen by ALPN.
   * PEM certificate chain and private key.
   */
  readonly tls?: TlsFiles;
}

/** A certificate chain and its private key (PEM), and the CA client certificates are checked against. */
export interface TlsFiles {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /**
   * With a CA, the server asks every client for a certificate and records on the socket
   * (`authorized`) whether this CA signed it; a client without one still connects (the data
   * API does not require one), and what needs it checks (see `peer-auth.ts`).
   */
  readonly ca?: string | Buffer;
}

function secureOptions(files: TlsFiles): tls.SecureContextOptions & tls.TlsOptions {
  return {
    cert: files.cert,
    key: files.key,
    ...(files.ca === undefined
      ? {}
      : { ca: files.ca, requestCert: true, rejectUnauthorized: false }),
  };
}

/**
 * Streams per HTTP/2 connection. Node advertises no limit by default and, past what its
 * session memory allows (~11.7k streams with the default 10 MB), refuses streams and then
 * destroys the whole session: one busy connection lost half its calls.
 */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 1000;
/** Memory (MB) one HTTP/2 session may buffer: room for the stream limit's headers and frames. */
const MAX_SESSION_MEMORY_MB = 64;

/** A listening server that speaks HTTP/1.1 and cleartext HTTP/2 (h2c) on one port. */
export interface DualProtocolServer {
  /** The bound address (port resolved when 0 was asked for). */
  readonly address: AddressInfo;
  /** `https` with TLS, else `http`. */
  readonly scheme: "http" | "https";
  /** Replaces the certificate and key for new connections (TLS only; open ones keep theirs). */
  setTls(files: TlsFiles): void;
  /**
   * Stops accepting, lets in-flight requests finish (HTTP/2 sessions get a GOAWAY), and
   * destroys whatever is still open after `graceMs`.
   */
  close(graceMs?: number): Promise<void>;
  /**
   * Resolves once no request is in flight but the {@link DualProtocolServerOptions.longLived}
   * ones (at once when none is). What a graceful stop waits for before it ends those.
   */
  requestsDone(): Promise<void>;
}

/**
 * Serves HTTP/1.1 and HTTP/2 cleartext on the same port. gRPC clients speak h2c with prior
 * knowledge, while `curl` and browsers default to HTTP/1.1, which an h2c-only server
 * refuses; so each connection's first bytes are sniffed for the HTTP/2 preface and the
 * socket is handed to the matching server.
 *
 * @example
 * const server = await createDualProtocolServer({ host: "127.0.0.1", port: 8080, handler });
 * await server.close();
 */
export async function createDualProtocolServer(
  options: DualProtocolServerOptions,
): Promise<DualProtocolServer> {
  const onError = options.onError ?? (() => {});
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const headersTimeoutMs = options.headersTimeoutMs ?? 10_000;
  const pingTimeoutMs = options.pingTimeoutMs ?? 10_000;
  // Requests in flight on either protocol, but the long-lived ones (see requestsDone).
  let active = 0;
  let whenDone: (() => void)[] = [];
  const release = (): void => {
    if (--active > 0) return;
    const done = whenDone;
    whenDone = [];
    for (const f of done) f();
  };
  const longLived = options.longLived;
  const counted = (path: string | undefined): boolean =>
    longLived === undefined || !longLived(path ?? "");
  const handler = options.handler;
  const h1 = http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    if (counted(req.url)) {
      active++;
      res.once("close", release);
    }
    handler(req, res);
  });
  // No request listener: that would wrap every stream in the compatibility API's objects.
  // Streams go to `streamHandler` first, and the rest through those objects to `handler`.
  const h2 = http2.createServer({
    settings: {
      maxConcurrentStreams: options.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS,
    },
    maxSessionMemory: MAX_SESSION_MEMORY_MB,
  });
  const streamHandler = options.streamHandler;
  // Sessions of the lean engine's bridge: their streams were counted and offered to
  // streamHandler on the lean connection already.
  const bridged = new WeakSet<Http2Session>();
  let bridging = false;
  h2.on(
    "stream",
    (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, raw: string[]) => {
      if (bridged.has(stream.session as Http2Session)) {
        compat(stream, headers, raw);
        return;
      }
      if (counted(headers[":path"])) {
        active++;
        stream.once("close", release);
      }
      if (streamHandler?.(stream, headers) === true) return;
      compat(stream, headers, raw);
    },
  );
  /** What Node's HTTP/2 server does with a stream when it has a request listener. */
  const compat = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, raw: string[]): void => {
    const req = new http2.Http2ServerRequest(stream, headers, {}, raw);
    const res = new http2.Http2ServerResponse(stream);
    if (headers[":method"] === "CONNECT") {
      res.statusCode = 405;
      res.end();
      return;
    }
    const expect = headers.expect;
    if (expect !== undefined) {
      if (expect !== "100-continue") {
        res.statusCode = 417;
        res.end();
        return;
      }
      res.writeContinue();
    }
    handler(req, res);
  };
  const sockets = new Set<Socket>();
  /** Sockets still being sniffed: no protocol, no request, safe to drop on close. */
  const unclaimed = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    if (bridging) bridged.add(session);
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    session.on("error", onError);
    // No frames for idleTimeoutMs: an idle client is let go (GOAWAY; open streams finish),
    // and a peer that is gone (a cut link is silence) is found by a ping nobody answers.
    session.setTimeout(idleTimeoutMs, () => {
      const dead = setTimeout(() => session.destroy(), pingTimeoutMs);
      dead.unref();
      const pinged = session.ping((err) => {
        if (err === null) clearTimeout(dead);
      });
      if (!pinged) clearTimeout(dead);
      session.close();
    });
  });
  h2.on("sessionError", onError);
  // HTTP/1.1 keep-alive sockets handed over by the sniffer are not in the server's own
  // connection tracking (it never listens), so requests in flight are counted here: on
  // close, idle sockets end at once and busy ones right after their response.
  const h1Sockets = new Set<Socket>();
  const h1Busy = new Map<Socket, number>();
  const h1InFlight = new Set<ServerResponse>();
  let closing = false;
  // Node's own headersTimeout is enforced only for connections of a server that listens;
  // this one is handed its sockets, so the deadline is kept here: from the handover, and
  // again after each response on a kept-alive socket, until the next request's headers.
  const headerDeadlines = new Map<Socket, NodeJS.Timeout>();
  const awaitHeaders = (socket: Socket): void => {
    clearTimeout(headerDeadlines.get(socket));
    const t = setTimeout(() => {
      headerDeadlines.delete(socket);
      socket.destroy();
    }, headersTimeoutMs);
    t.unref();
    headerDeadlines.set(socket, t);
  };
  h1.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    clearTimeout(headerDeadlines.get(socket));
    headerDeadlines.delete(socket);
    h1Busy.set(socket, (h1Busy.get(socket) ?? 0) + 1);
    if (closing) res.shouldKeepAlive = false;
    h1InFlight.add(res);
    res.once("close", () => {
      h1InFlight.delete(res);
      const left = (h1Busy.get(socket) ?? 1) - 1;
      if (left > 0) h1Busy.set(socket, left);
      else h1Busy.delete(socket);
      if (closing && left <= 0) socket.end();
      else if (left <= 0 && !socket.destroyed) awaitHeaders(socket);
    });
  });
  h1.on("clientError", (err: Error, socket: Socket) => {
    onError(err);
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    else socket.destroy();
  });

  const bridge = new NodeBridge((socket: Duplex) => {
    bridging = true;
    try {
      h2.emit("connection", socket);
    } finally {
      bridging = false;
    }
  });
  const leanConnections = new Set<H2cConnection>();
  const maxConcurrentStreams = options.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS;
  const toLean = (socket: Socket): void => {
    const connection = new H2cConnection(socket, {
      onStream: (stream, headers, raw) => {
        if (counted(headers[":path"])) {
          active++;
          stream.once("close", release);
        }
        if (streamHandler?.(stream as unknown as ServerHttp2Stream, headers) === true) return;
        bridge.forward(stream, raw);
      },
      maxConcurrentStreams,
      idleTimeoutMs,
      pingTimeoutMs,
      onError,
    });
    leanConnections.add(connection);
    connection.onClose(() => leanConnections.delete(connection));
  };
  // Without a stream handler every stream would be passed on: Node's server then serves h2c.
  const lean = options.h2cEngine !== "node" && streamHandler !== undefined;
  const toH2 = (socket: Socket): void => {
    if (lean && !(socket instanceof tls.TLSSocket)) toLean(socket);
    else h2.emit("connection", socket);
  };
  const toH1 = (socket: Socket): void => {
    h1Sockets.add(socket);
    socket.once("close", () => {
      h1Sockets.delete(socket);
      clearTimeout(headerDeadlines.get(socket));
      headerDeadlines.delete(socket);
    });
    awaitHeaders(socket);
    h1.emit("connection", socket);
    socket.resume();
  };
  /** Every accepted socket: tracked, and closed when silent before a protocol is known. */
  const accept = (socket: Socket): void => {
    sockets.add(socket);
    unclaimed.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      unclaimed.delete(socket);
    });
    socket.on("error", onError);
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    socket.setNoDelay(true);
  };
  const claim = (socket: Socket): void => {
    unclaimed.delete(socket);
    socket.setTimeout(0);
  };

  // Cleartext: the first bytes tell HTTP/2's preface from HTTP/1.1. TLS: ALPN says which.
  const tcp: net.Server = options.tls
    ? tls.createServer(
        {
          ...secureOptions(options.tls),
          ALPNProtocols: ["h2", "http/1.1"],
          handshakeTimeout: Math.min(idleTimeoutMs, 10_000),
        },
        (socket: TLSSocket) => {
          // The raw socket was accepted (and is tracked) on "connection"; this is its TLS side.
          sockets.add(socket);
          socket.on("close", () => sockets.delete(socket));
          socket.on("error", onError);
          if (socket.alpnProtocol === "h2") toH2(socket);
          else toH1(socket);
        },
      )
    : net.createServer((socket) => {
        accept(socket);
        let head: Buffer = Buffer.alloc(0);
        const sniff = (chunk: Buffer): void => {
          head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
          const n = Math.min(head.length, PREFACE.length);
          const maybeH2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
          if (maybeH2 && head.length < PREFACE.length) return; // need the rest of the preface
          socket.off("data", sniff);
          claim(socket);
          socket.pause();
          socket.unshift(head);
          if (maybeH2) toH2(socket);
          else toH1(socket);
        };
        socket.on("data", sniff);
      });
  if (options.tls) {
    // The raw sockets: tracked from accept; the handshake is bounded by handshakeTimeout.
    tcp.on("connection", (raw: Socket) => {
      accept(raw);
      claim(raw);
    });
    tcp.on("tlsClientError", (err: Error) => onError(err));
  }

  // Node closes connections beyond the limit as they are accepted.
  if (options.maxConnections !== undefined) tcp.maxConnections = options.maxConnections;
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen({ host: options.host, port: options.port }, () => {
      tcp.off("error", reject);
      resolve();
    });
  });
  tcp.on("error", onError);
  const address = tcp.address() as AddressInfo;

  return {
    address,
    scheme: options.tls ? "https" : "http",
    setTls(files) {
      if (!(tcp instanceof tls.Server)) throw new Error("this server does not serve TLS");
      tcp.setSecureContext(secureOptions(files));
    },
    requestsDone() {
      return active === 0 ? Promise.resolve() : new Promise((resolve) => whenDone.push(resolve));
    },
    async close(graceMs = 10_000): Promise<void> {
      closing = true;
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      for (const socket of unclaimed) socket.destroy();
      for (const socket of h1Sockets) if (!h1Busy.has(socket)) socket.end();
      // Responses not yet started tell their client this connection ends with them.
      for (const res of h1InFlight) if (!res.headersSent) res.shouldKeepAlive = false;
      for (const session of sessions) session.close();
      for (const connection of leanConnections) connection.close();
      bridge.close();
      h1.closeIdleConnections();
      h1.close();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
        for (const session of sessions) session.destroy();
        for (const connection of leanConnections) connection.destroy();
        bridge.destroy();
      }, graceMs);
      timer.unref();
      // Idle HTTP/1.1 keep-alive sockets that never got a request are closed right away.
      const drain = setInterval(() => h1.closeIdleConnections(), 100);
      drain.unref();
      await closed;
      clearInterval(drain);
      clearTimeout(timer);
    },
  };
}

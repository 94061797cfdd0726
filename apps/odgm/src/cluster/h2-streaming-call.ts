// One client-streaming gRPC call on an HTTP/2 connection of its own, framed here and written
// straight to the socket: the sending half of the Raft transport (raft-transport.ts).
//
// Why not Node's HTTP/2 client: nghttp2 hands what a stream is given to the socket only in
// Node's next pass of native immediates, which runs at the start of the event loop's next
// check phase, after that turn's timers and I/O. The transport writes from the end-of-turn
// pass (turn.ts, itself in the check phase), so every append a leader sent and every answer a
// follower sent waited for a whole further turn of a busy event loop (on a leader at 64
// writes in flight, 0.5–1.6 ms median from the write to the socket; BENCHMARKS.md). Here a
// write is a `socket.write` in the same pass.
//
// It speaks what the call needs of RFC 9113: the preface and SETTINGS, one request HEADERS
// (stream 1), DATA under both flow-control windows (waiting for WINDOW_UPDATE when they are
// shut), answers to the peer's SETTINGS and PINGs, and WINDOW_UPDATEs for what the peer sends.
// It reads the response's headers and trailers (every header block is decoded, so the HPACK
// table stays in step), RST_STREAM and GOAWAY, and pings the peer so that a link that went
// silent is noticed. Any end of the call — trailers, a reset, a GOAWAY that does not let the
// stream finish, a socket error or close, a ping not answered in time, a protocol error of
// the peer — is reported once to the `whenEnded` callback, as a ConnectError (the error
// status the peer sent, when it sent one).
import net, { type Socket } from "node:net";
import tls from "node:tls";
import { Code, ConnectError } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  ErrorCode,
  Flag,
  FRAME_HEADER_BYTES,
  FrameType,
  frame,
  H2ConnectionError,
  HeaderBlockAssembly,
  headerBlockFragment,
  MAX_WINDOW,
  readFrames,
  Setting,
  settingsFrame,
  u32Frame,
  writeFrameHeader,
} from "../server/h2c/h2-frames.js";
import { HpackDecoder, HpackEncoder } from "../server/h2c/hpack.js";
import { IncomingHeaders } from "../server/lazy-headers.js";

/** What a node presents to its peers over `https://` and checks them against (PEM). */
export interface PeerTls {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  readonly ca: string | Buffer;
}

/** Options of {@link H2StreamingCall.open}. */
export interface H2StreamingCallOptions {
  /** `http://host:port` (cleartext HTTP/2) or `https://host:port` (TLS, ALPN `h2`). */
  readonly url: string;
  /** The method's path, e.g. `/oprc.RaftService/Stream`. */
  readonly path: string;
  /** Request headers besides the pseudo-headers, as a flat list (`[name, value, …]`, lowercase). */
  readonly headers: readonly string[];
  /** What to present and trust over `https://`. */
  readonly tls?: PeerTls;
  /** A PING every this often (ms). */
  readonly pingIntervalMs: number;
  /** A PING not answered within this (ms) ends the call. */
  readonly pingTimeoutMs: number;
  /** Connecting (TLS handshake included) may take this long (ms). Default 5000. */
  readonly connectTimeoutMs?: number;
}

/** The one stream of the connection. */
const STREAM_ID = 1;
/** Our windows for what the peer sends (the response: one small message, or none). */
const RECEIVE_WINDOW = DEFAULT_WINDOW;
/** The largest frame we accept: the default, which our SETTINGS leave as it is. */
const MAX_RECEIVE_FRAME = DEFAULT_MAX_FRAME_SIZE;
/** The largest response header list we decode. */
const MAX_HEADER_LIST = 64 * 1024;
const LARGEST_FRAME_SIZE = 16_777_215;
/** How long {@link H2StreamingCall.close} lets the peer close the connection itself (ms). */
const CLOSE_GRACE_MS = 1000;

/** A write waiting for the flow-control windows to open. */
interface PendingWrite {
  readonly data: Uint8Array;
  at: number;
  readonly cb: (err: Error | null) => void;
}

/** See the file comment. */
export class H2StreamingCall {
  readonly #socket: Socket;
  readonly #origin: string;
  readonly #decoder = new HpackDecoder();
  #in: Buffer | undefined;
  #connSend = DEFAULT_WINDOW;
  #streamSend = DEFAULT_WINDOW;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  #connUnacked = 0;
  #streamUnacked = 0;
  #pending: PendingWrite | undefined;
  readonly #headerBlocks = new HeaderBlockAssembly(MAX_HEADER_LIST, ErrorCode.PROTOCOL_ERROR);
  #responded = false;
  /** The error status the peer answered with (headers or trailers), as connect reads it. */
  #refused: ConnectError | undefined;
  readonly #pingTimer: NodeJS.Timeout;
  readonly #pingTimeoutMs: number;
  #pingDeadline: NodeJS.Timeout | undefined;
  /** Set once the call ended (or was closed here); the reason, when it ended by itself. */
  #ended: { readonly err: ConnectError | undefined } | undefined;
  #onEnd: ((err: ConnectError) => void) | undefined;

  /**
   * Connects (TLS included) and sends the request's headers; resolves with the open call, or
   * rejects (UNAVAILABLE) when the peer cannot be reached.
   */
  static open(o: H2StreamingCallOptions): Promise<H2StreamingCall> {
    const url = new URL(o.url);
    const secure = url.protocol === "https:";
    if (!secure && url.protocol !== "http:") {
      return Promise.reject(new ConnectError(`unsupported peer URL ${o.url}`, Code.Internal));
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(url.port || (secure ? 443 : 80));
    const block = new HpackEncoder().encode([
      ":method",
      "POST",
      ":scheme",
      secure ? "https" : "http",
      ":authority",
      url.host,
      ":path",
      o.path,
      ...o.headers,
    ]);
    if (block.length > DEFAULT_MAX_FRAME_SIZE) {
      return Promise.reject(new ConnectError("request headers too large", Code.Internal));
    }
    const timeoutMs = o.connectTimeoutMs ?? 5000;
    return new Promise((resolve, reject) => {
      const socket = secure
        ? tls.connect({
            host,
            port,
            ALPNProtocols: ["h2"],
            ...(net.isIP(host) === 0 ? { servername: host } : {}),
            ...(o.tls === undefined ? {} : { cert: o.tls.cert, key: o.tls.key, ca: o.tls.ca }),
          })
        : net.connect({ host, port });
      const failed = (err: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(unavailable(`cannot reach ${url.origin}: ${err.message}`, err));
      };
      // A blackholed address would otherwise hold the socket for the kernel's SYN retries.
      const timer = setTimeout(
        () => failed(new Error(`no connection within ${timeoutMs} ms`)),
        timeoutMs,
      );
      timer.unref();
      socket.once("error", failed);
      socket.once(secure ? "secureConnect" : "connect", () => {
        socket.off("error", failed);
        if (secure && (socket as tls.TLSSocket).alpnProtocol !== "h2") {
          failed(new Error("the peer does not speak HTTP/2 over TLS"));
          return;
        }
        clearTimeout(timer);
        resolve(new H2StreamingCall(socket, url, block, o));
      });
    });
  }

  private constructor(socket: Socket, url: URL, block: Buffer, o: H2StreamingCallOptions) {
    this.#socket = socket;
    this.#origin = url.origin;
    this.#pingTimeoutMs = o.pingTimeoutMs;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", (err) => this.#end(unavailable(`${this.#origin}: ${err.message}`, err)));
    socket.on("close", () => this.#end(unavailable(`the connection to ${this.#origin} closed`)));
    socket.write(
      Buffer.concat([
        CLIENT_PREFACE,
        settingsFrame([[Setting.ENABLE_PUSH, 0]]),
        frame(FrameType.HEADERS, Flag.END_HEADERS, STREAM_ID, block),
      ]),
    );
    this.#pingTimer = setInterval(() => this.#ping(), o.pingIntervalMs);
    this.#pingTimer.unref();
  }

  /** Whether the call ended or was closed: nothing more can be written. */
  get closed(): boolean {
    return this.#ended !== undefined;
  }

  /** Calls `fn` once the call ends by itself (at once if it has); never after {@link close}. */
  whenEnded(fn: (err: ConnectError) => void): void {
    const ended = this.#ended;
    if (ended === undefined) this.#onEnd = fn;
    else if (ended.err !== undefined) fn(ended.err);
  }

  /**
   * Sends `data` as the body's next bytes; `cb` once all of it went to the socket (after the
   * peer's windows let it), or with the error that ended the call first. One write at a time.
   */
  write(data: Uint8Array, cb: (err: Error | null) => void): void {
    if (this.#ended !== undefined) {
      process.nextTick(cb, this.#ended.err ?? unavailable("the call was closed"));
      return;
    }
    if (this.#pending !== undefined) throw new Error("a write is already in progress");
    this.#pending = { data, at: 0, cb };
    this.#pump();
  }

  /**
   * Resets the stream (`code`, default CANCEL) and closes the connection; reports nothing. A
   * peer that does not take the reset and close within a second (it stopped reading) has the
   * connection destroyed.
   */
  close(code: number = ErrorCode.CANCEL): void {
    if (this.#ended !== undefined) return;
    this.#ended = { err: undefined };
    this.#stop(unavailable("the call was closed"));
    const socket = this.#socket;
    socket.end(u32Frame(FrameType.RST_STREAM, STREAM_ID, code));
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Writes as much of the pending write as both send windows allow. */
  #pump(): void {
    const p = this.#pending;
    if (p === undefined || this.#ended !== undefined) return;
    const socket = this.#socket;
    let wrote = false;
    while (p.at < p.data.length) {
      const n = Math.min(
        p.data.length - p.at,
        this.#peerMaxFrame,
        this.#connSend,
        this.#streamSend,
      );
      if (n <= 0) break;
      if (!wrote) socket.cork();
      wrote = true;
      const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      writeFrameHeader(head, 0, n, FrameType.DATA, 0, STREAM_ID);
      socket.write(head);
      const last = p.at + n === p.data.length;
      const body = p.data.subarray(p.at, p.at + n);
      p.at += n;
      this.#connSend -= n;
      this.#streamSend -= n;
      if (last) {
        this.#pending = undefined;
        socket.write(body, (err) => p.cb(err ?? null));
      } else socket.write(body);
    }
    if (wrote) socket.uncork();
  }

  #ping(): void {
    if (this.#ended !== undefined || this.#pingDeadline !== undefined) return;
    this.#socket.write(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    this.#pingDeadline = setTimeout(() => {
      this.#end(unavailable(`${this.#origin} did not answer a ping in ${this.#pingTimeoutMs} ms`));
    }, this.#pingTimeoutMs);
    this.#pingDeadline.unref();
  }

  #onData(chunk: Buffer): void {
    // After a close here, what the peer still sends is of no interest.
    if (this.#ended !== undefined) return;
    const buf = this.#in === undefined ? chunk : Buffer.concat([this.#in, chunk]);
    let at: number;
    try {
      at = readFrames(buf, MAX_RECEIVE_FRAME, this.#frameRead);
    } catch (err) {
      this.#end(unavailable(`${this.#origin} broke HTTP/2: ${(err as Error).message}`, err));
      return;
    }
    if (this.#ended !== undefined) return;
    this.#in = at === buf.length ? undefined : buf.subarray(at);
  }

  /** {@link readFrames}' callback: one frame, and whether to go on (the call lives). */
  readonly #frameRead = (type: number, flags: number, streamId: number, p: Buffer): boolean => {
    this.#frame(type, flags, streamId, p);
    return this.#ended === undefined;
  };

  #frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (this.#headerBlocks.open) {
      const done = this.#headerBlocks.continue(type, flags, streamId, payload);
      if (done !== undefined) this.#headerBlock(done.streamId, done.endStream, done.block);
      return;
    }
    switch (type) {
      case FrameType.DATA: {
        if (streamId === 0) throw protocolError("DATA on stream 0");
        this.#received(streamId, payload.length);
        if (streamId === STREAM_ID && (flags & Flag.END_STREAM) !== 0) this.#endedByPeer();
        return;
      }
      case FrameType.HEADERS: {
        if (streamId === 0) throw protocolError("HEADERS on stream 0");
        const fragment = headerBlockFragment(flags, payload);
        const endStream = (flags & Flag.END_STREAM) !== 0;
        if ((flags & Flag.END_HEADERS) !== 0) this.#headerBlock(streamId, endStream, fragment);
        else this.#headerBlocks.start(streamId, endStream, fragment);
        return;
      }
      case FrameType.CONTINUATION:
        throw protocolError("CONTINUATION without its HEADERS");
      case FrameType.RST_STREAM: {
        if (payload.length !== 4) throw protocolError("RST_STREAM of a wrong size");
        if (streamId === STREAM_ID) this.#endedByPeer(payload.readUInt32BE(0));
        return;
      }
      case FrameType.SETTINGS: {
        if (streamId !== 0 || payload.length % 6 !== 0) throw protocolError("bad SETTINGS");
        if ((flags & Flag.ACK) !== 0) return;
        for (let i = 0; i < payload.length; i += 6)
          this.#setting(payload.readUInt16BE(i), payload.readUInt32BE(i + 2));
        this.#socket.write(frame(FrameType.SETTINGS, Flag.ACK, 0));
        this.#pump();
        return;
      }
      case FrameType.PING: {
        if (streamId !== 0 || payload.length !== 8) throw protocolError("bad PING");
        if ((flags & Flag.ACK) === 0)
          this.#socket.write(frame(FrameType.PING, Flag.ACK, 0, payload));
        else if (this.#pingDeadline !== undefined) {
          clearTimeout(this.#pingDeadline);
          this.#pingDeadline = undefined;
        }
        return;
      }
      case FrameType.GOAWAY: {
        if (payload.length < 8) throw protocolError("GOAWAY of a wrong size");
        const last = payload.readUInt32BE(0) & 0x7fff_ffff;
        const code = payload.readUInt32BE(4);
        // A graceful GOAWAY that counts our stream in lets it go on (RFC 9113 §6.8): a
        // stopping node drains its peers' Raft streams that way, and hears through them that
        // another node leads now. The connection's close ends the call later.
        if (code === ErrorCode.NO_ERROR && last >= STREAM_ID) return;
        this.#end(unavailable(`${this.#origin} is going away (GOAWAY ${code})`));
        return;
      }
      case FrameType.WINDOW_UPDATE: {
        if (payload.length !== 4) throw protocolError("WINDOW_UPDATE of a wrong size");
        const increment = payload.readUInt32BE(0) & 0x7fff_ffff;
        if (increment === 0) throw protocolError("a WINDOW_UPDATE of 0");
        if (streamId === 0) this.#connSend += increment;
        else if (streamId === STREAM_ID) this.#streamSend += increment;
        if (this.#connSend > MAX_WINDOW || this.#streamSend > MAX_WINDOW) {
          throw protocolError("a flow-control window above 2^31 - 1");
        }
        this.#pump();
        return;
      }
      case FrameType.PUSH_PROMISE:
        throw protocolError("PUSH_PROMISE, though push is disabled");
      default:
        // PRIORITY and unknown frame types are ignored (RFC 9113 §4.1, §5.3.2).
        return;
    }
  }

  #setting(id: number, value: number): void {
    if (id === Setting.INITIAL_WINDOW_SIZE) {
      if (value > MAX_WINDOW) throw protocolError("INITIAL_WINDOW_SIZE above 2^31 - 1");
      this.#streamSend += value - this.#peerInitialWindow;
      this.#peerInitialWindow = value;
    } else if (id === Setting.MAX_FRAME_SIZE) {
      if (value < DEFAULT_MAX_FRAME_SIZE || value > LARGEST_FRAME_SIZE) {
        throw protocolError(`MAX_FRAME_SIZE ${value}`);
      }
      this.#peerMaxFrame = value;
    }
    // Others do not concern a client that sends one stateless header block.
  }

  /** Counts what the peer sent against our windows and opens them again at half. */
  #received(streamId: number, bytes: number): void {
    this.#connUnacked += bytes;
    if (this.#connUnacked >= RECEIVE_WINDOW / 2) {
      this.#socket.write(u32Frame(FrameType.WINDOW_UPDATE, 0, this.#connUnacked));
      this.#connUnacked = 0;
    }
    if (streamId !== STREAM_ID) return;
    this.#streamUnacked += bytes;
    if (this.#streamUnacked >= RECEIVE_WINDOW / 2) {
      this.#socket.write(u32Frame(FrameType.WINDOW_UPDATE, STREAM_ID, this.#streamUnacked));
      this.#streamUnacked = 0;
    }
  }

  /** A complete header block: decoded whatever its stream (HPACK state), read if ours. */
  #headerBlock(streamId: number, endStream: boolean, block: Buffer): void {
    const list = this.#decoder.decode(block, MAX_HEADER_LIST);
    if (streamId !== STREAM_ID) return;
    const headers: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) headers[list[i] as string] = list[i + 1] as string;
    if (!this.#responded) {
      this.#responded = true;
      const status = headers[":status"];
      if (status !== "200") {
        this.#end(new ConnectError(`HTTP status ${status}`, Code.Unavailable));
        return;
      }
    }
    this.#refused ??= findTrailerError(new IncomingHeaders(headers));
    if (endStream) this.#endedByPeer();
  }

  /** The peer ended the call (its trailers, an END_STREAM, or a reset). */
  #endedByPeer(reset?: number): void {
    this.#end(
      this.#refused ??
        unavailable(`the peer ended the call${reset === undefined ? "" : ` (reset ${reset})`}`),
    );
  }

  #end(err: ConnectError): void {
    if (this.#ended !== undefined) return;
    this.#ended = { err };
    this.#stop(err);
    this.#socket.destroy();
    this.#onEnd?.(err);
  }

  /** Stops the timers and fails a write still waiting for the windows. */
  #stop(err: ConnectError): void {
    clearInterval(this.#pingTimer);
    if (this.#pingDeadline !== undefined) clearTimeout(this.#pingDeadline);
    const p = this.#pending;
    this.#pending = undefined;
    if (p !== undefined) process.nextTick(p.cb, err);
  }
}

function protocolError(message: string): H2ConnectionError {
  return new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, message);
}

function unavailable(message: string, cause?: unknown): ConnectError {
  return new ConnectError(message, Code.Unavailable, undefined, undefined, cause);
}

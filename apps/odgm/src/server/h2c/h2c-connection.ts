// One HTTP/2 connection served by the lean engine (RFC 9113, server side, prior knowledge):
// frames are parsed from each socket read in JavaScript, every stream is handed to
// `onStream` as an {@link H2cStream}, and what the streams send leaves in one socket write
// per turn of the event loop. Node's own HTTP/2 (nghttp2 and a Duplex stream object per
// request) costs 4–5× the CPU per gRPC call on the load the cluster sees: see
// BENCHMARKS.md. Flow control both ways, CONTINUATION, PING, GOAWAY and the protocol's
// error handling are here; server push, priorities (ignored, as RFC 9113 allows) and the
// HTTP/1.1 upgrade are not.
import type { IncomingHttpHeaders } from "node:http2";
import type { Socket } from "node:net";
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  ErrorCode,
  Flag,
  FRAME_HEADER_BYTES,
  FrameType,
  frame,
  goawayFrame,
  H2ConnectionError,
  HeaderBlockAssembly,
  headerBlockFragment,
  MAX_WINDOW,
  readFrames,
  Setting,
  settingsFrame,
  u32Frame,
  writeFrameHeader,
} from "./h2-frames.js";
import { H2cStream, type StreamOwner } from "./h2c-stream.js";
import { HeaderListTooLargeError, HpackDecoder, HpackEncoder } from "./hpack.js";

/** Options of {@link H2cConnection}. */
export interface H2cConnectionOptions {
  /** Every new request stream, with its headers as Node gives them and the flat raw list. */
  readonly onStream: (stream: H2cStream, headers: IncomingHttpHeaders, raw: string[]) => void;
  /** Streams open at once; more are refused (REFUSED_STREAM, which clients retry). */
  readonly maxConcurrentStreams: number;
  /** Largest request header list (RFC 9113 §6.5.2); larger is answered 431. Default 64 KiB. */
  readonly maxHeaderListSize?: number;
  /** No frame for this long: a ping, and a graceful close (open streams finish). */
  readonly idleTimeoutMs: number;
  /** How long that ping may take before the connection is destroyed. */
  readonly pingTimeoutMs: number;
  /** Protocol errors of the peer, and socket errors (never thrown). */
  readonly onError?: (err: Error) => void;
}

/** The window each request stream starts with (we say so in SETTINGS). */
const STREAM_WINDOW = 1024 * 1024;
/** The connection's receive window (raised from 65,535 at the start). */
const CONNECTION_WINDOW = 16 * 1024 * 1024;
const DEFAULT_MAX_HEADER_LIST = 64 * 1024;
/** Resets by the peer per second past which it is told to calm down (CVE-2023-44487). */
const MAX_RESETS_PER_SECOND = 2000;
/**
 * Body bytes the streams of one connection may hold for a peer that does not read them (its
 * windows stay shut); past it the connection ends (what Node's maxSessionMemory bounds).
 */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** Headers HTTP/2 forbids (RFC 9113 §8.2.2). */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);
const REQUEST_PSEUDO = new Set([":method", ":scheme", ":authority", ":path", ":protocol"]);

interface Entry {
  readonly stream: H2cStream;
  /** What the peer may still send us on this stream. */
  recv: number;
  /** Read by the consumer and not yet given back. */
  unacked: number;
}

/** Serves one socket; see the file comment. */
export class H2cConnection implements StreamOwner {
  readonly #socket: Socket;
  readonly #o: H2cConnectionOptions;
  readonly #decoder = new HpackDecoder();
  readonly #encoder = new HpackEncoder();
  readonly #maxHeaderList: number;
  readonly #streams = new Map<number, Entry>();
  readonly #sending = new Set<H2cStream>();
  #in: Buffer | undefined;
  #prefaceSeen = 0;
  #settingsSeen = false;
  #out: Buffer[] = [];
  #flushQueued = false;
  readonly #headerBlocks: HeaderBlockAssembly;
  #lastStreamId = 0;
  #connRecv = CONNECTION_WINDOW;
  #connUnacked = 0;
  #connSend = DEFAULT_WINDOW;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  #goingAway = false;
  #dead = false;
  #resets = 0;
  #buffered = 0;
  #resetSecond = 0;
  #pingTimer: NodeJS.Timeout | undefined;
  #onClose: (() => void)[] = [];

  constructor(socket: Socket, options: H2cConnectionOptions) {
    this.#socket = socket;
    this.#o = options;
    this.#maxHeaderList = options.maxHeaderListSize ?? DEFAULT_MAX_HEADER_LIST;
    // The encoded block may be larger than the list it decodes to only so much.
    this.#headerBlocks = new HeaderBlockAssembly(
      this.#maxHeaderList * 4,
      ErrorCode.ENHANCE_YOUR_CALM,
    );
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("drain", () => {
      for (const { stream } of this.#streams.values()) stream.socketDrained();
    });
    socket.on("error", (err) => options.onError?.(err));
    socket.on("close", () => this.#lost());
    // The acceptor's own timeout (for sockets whose protocol is not known yet) ends here.
    socket.removeAllListeners("timeout");
    socket.setTimeout(options.idleTimeoutMs, () => this.#idle());
    this.#queue(
      settingsFrame([
        [Setting.MAX_CONCURRENT_STREAMS, options.maxConcurrentStreams],
        [Setting.INITIAL_WINDOW_SIZE, STREAM_WINDOW],
        [Setting.MAX_HEADER_LIST_SIZE, this.#maxHeaderList],
      ]),
    );
    this.#queue(u32Frame(FrameType.WINDOW_UPDATE, 0, CONNECTION_WINDOW - DEFAULT_WINDOW));
    this.#flush();
    socket.resume();
  }

  /** Calls `f` once the socket closed. */
  onClose(f: () => void): void {
    if (this.#dead && this.#socket.destroyed) f();
    else this.#onClose.push(f);
  }

  /** Graceful close: GOAWAY; open streams finish, new ones are refused, then the socket ends. */
  close(): void {
    if (this.#goingAway || this.#dead) return;
    this.#goingAway = true;
    this.#queue(goawayFrame(this.#lastStreamId, ErrorCode.NO_ERROR));
    this.#flush();
    if (this.#streams.size === 0) this.#socket.end();
  }

  /** Ends the connection at once. */
  destroy(): void {
    this.#socket.destroy();
  }

  // ---- StreamOwner ----

  get congested(): boolean {
    return this.#socket.writableNeedDrain;
  }

  sendHeaders(id: number, headers: readonly string[], endStream: boolean): void {
    if (this.#dead) return;
    const block = this.#encoder.encode(headers);
    const max = this.#peerMaxFrame;
    let first = true;
    for (let at = 0; first || at < block.length; at += max) {
      const part = block.subarray(at, at + max);
      const last = at + max >= block.length;
      const type = first ? FrameType.HEADERS : FrameType.CONTINUATION;
      const flags = (last ? Flag.END_HEADERS : 0) | (first && endStream ? Flag.END_STREAM : 0);
      this.#queue(frame(type, flags, id, part));
      first = false;
    }
  }

  sendEmptyEnd(id: number): void {
    if (!this.#dead) this.#queue(frame(FrameType.DATA, Flag.END_STREAM, id));
  }

  buffered(delta: number): void {
    this.#buffered += delta;
    if (this.#buffered > MAX_BUFFERED_BYTES && !this.#dead) {
      this.#fail(
        new H2ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, "the peer does not read its responses"),
      );
    }
  }

  wantsToSend(stream: H2cStream): void {
    this.#sending.add(stream);
    this.#pump();
  }

  reset(stream: H2cStream, code: number): void {
    if (!this.#dead) this.#queue(u32Frame(FrameType.RST_STREAM, stream.id, code));
  }

  done(stream: H2cStream): void {
    this.#streams.delete(stream.id);
    this.#sending.delete(stream);
    if (this.#goingAway && this.#streams.size === 0 && !this.#dead) {
      this.#flush();
      this.#socket.end();
    }
  }

  consumed(stream: H2cStream, bytes: number): void {
    this.#credit(bytes);
    const entry = this.#streams.get(stream.id);
    if (entry === undefined || stream.remoteEnded) return;
    entry.unacked += bytes;
    if (entry.unacked >= STREAM_WINDOW / 2) {
      this.#queue(u32Frame(FrameType.WINDOW_UPDATE, stream.id, entry.unacked));
      entry.recv += entry.unacked;
      entry.unacked = 0;
    }
  }

  // ---- input ----

  #onData(chunk: Buffer): void {
    if (this.#dead) return;
    let buf = this.#in === undefined ? chunk : Buffer.concat([this.#in, chunk]);
    this.#in = undefined;
    try {
      if (this.#prefaceSeen < CLIENT_PREFACE.length) {
        const n = Math.min(buf.length, CLIENT_PREFACE.length - this.#prefaceSeen);
        if (
          !buf
            .subarray(0, n)
            .equals(CLIENT_PREFACE.subarray(this.#prefaceSeen, this.#prefaceSeen + n))
        ) {
          throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "bad connection preface");
        }
        this.#prefaceSeen += n;
        buf = buf.subarray(n);
      }
      const at = readFrames(buf, DEFAULT_MAX_FRAME_SIZE, this.#frameRead);
      if (this.#dead) return;
      if (at < buf.length) this.#in = buf.subarray(at);
    } catch (err) {
      if (err instanceof H2ConnectionError) this.#fail(err);
      else {
        // A listener threw (a bug): this connection ends, the process goes on.
        this.#o.onError?.(err as Error);
        this.#fail(new H2ConnectionError(ErrorCode.INTERNAL_ERROR, "internal error"));
      }
    }
    this.#flush();
  }

  /** {@link readFrames}' callback: one frame, and whether to go on (the connection lives). */
  readonly #frameRead = (type: number, flags: number, id: number, p: Buffer): boolean => {
    this.#onFrame(type, flags, id, p);
    return !this.#dead;
  };

  #onFrame(type: number, flags: number, id: number, p: Buffer): void {
    if (!this.#settingsSeen) {
      if (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0) {
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "the first frame must be SETTINGS");
      }
      this.#settingsSeen = true;
    }
    if (this.#headerBlocks.open) {
      const done = this.#headerBlocks.continue(type, flags, id, p);
      if (done !== undefined) this.#onHeaderBlock(done.streamId, done.endStream, done.block);
      return;
    }
    switch (type) {
      case FrameType.DATA:
        this.#onDataFrame(flags, id, p);
        return;
      case FrameType.HEADERS:
        this.#onHeadersFrame(flags, id, p);
        return;
      case FrameType.PRIORITY:
        if (id === 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "PRIORITY on stream 0");
        // A wrong size is a stream error; an idle or closed stream cannot be reset (§5.1).
        if (p.length !== 5 && this.#streams.has(id))
          this.#streamError(id, ErrorCode.FRAME_SIZE_ERROR);
        return;
      case FrameType.RST_STREAM:
        this.#onReset(id, p);
        return;
      case FrameType.SETTINGS:
        this.#onSettings(flags, id, p);
        return;
      case FrameType.PUSH_PROMISE:
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "a client may not push");
      case FrameType.PING:
        if (id !== 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "PING on a stream");
        if (p.length !== 8) throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, "PING size");
        if ((flags & Flag.ACK) === 0) this.#queue(frame(FrameType.PING, Flag.ACK, 0, p));
        else if (this.#pingTimer !== undefined) {
          clearTimeout(this.#pingTimer);
          this.#pingTimer = undefined;
        }
        return;
      case FrameType.GOAWAY:
        if (id !== 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
        // The client sends no more streams; those open finish, then the socket ends.
        this.#goingAway = true;
        if (this.#streams.size === 0) this.#socket.end();
        return;
      case FrameType.WINDOW_UPDATE:
        this.#onWindowUpdate(id, p);
        return;
      case FrameType.CONTINUATION:
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "CONTINUATION without HEADERS");
      default:
        return; // unknown frame types are ignored (RFC 9113 §5.5)
    }
  }

  #onDataFrame(flags: number, id: number, p: Buffer): void {
    if (id === 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0");
    this.#connRecv -= p.length;
    if (this.#connRecv < 0) {
      throw new H2ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, "connection window exceeded");
    }
    let data = p;
    if ((flags & Flag.PADDED) !== 0) {
      const pad = p.length === 0 ? 0 : (p[0] as number);
      if (p.length === 0 || pad >= p.length) {
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "padding longer than the frame");
      }
      data = p.subarray(1, p.length - pad);
    }
    const entry = this.#streams.get(id);
    if (entry === undefined) {
      if (id > this.#lastStreamId) {
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "DATA on an idle stream");
      }
      this.#credit(p.length); // a stream that closed meanwhile: its bytes count for nothing
      return;
    }
    const stream = entry.stream;
    if (stream.remoteEnded) {
      this.#credit(p.length);
      this.#streamError(id, ErrorCode.STREAM_CLOSED);
      return;
    }
    entry.recv -= p.length;
    if (entry.recv < 0) {
      this.#credit(p.length);
      this.#streamError(id, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    if (data.length < p.length) this.#credit(p.length - data.length);
    if (data.length > 0) stream.receive(data);
    if ((flags & Flag.END_STREAM) !== 0 && !stream.closed) stream.remoteEnd();
  }

  #onHeadersFrame(flags: number, id: number, p: Buffer): void {
    if (id === 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0");
    if ((flags & Flag.PRIORITY) !== 0) {
      const at = (flags & Flag.PADDED) !== 0 ? 1 : 0;
      if (p.length >= at + 4 && (p.readUInt32BE(at) & 0x7fff_ffff) === id) {
        this.#streamError(id, ErrorCode.PROTOCOL_ERROR); // a stream cannot depend on itself
      }
    }
    const fragment = headerBlockFragment(flags, p);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if ((flags & Flag.END_HEADERS) !== 0) this.#onHeaderBlock(id, endStream, fragment);
    else this.#headerBlocks.start(id, endStream, fragment);
  }

  #onHeaderBlock(id: number, endStream: boolean, block: Buffer): void {
    let raw: string[] | undefined;
    let tooLarge = false;
    try {
      raw = this.#decoder.decode(block, this.#maxHeaderList);
    } catch (err) {
      if (err instanceof HeaderListTooLargeError) tooLarge = true;
      else throw new H2ConnectionError(ErrorCode.COMPRESSION_ERROR, (err as Error).message);
    }
    const open = this.#streams.get(id);
    if (open !== undefined) {
      // Trailers of a request: they must end it; their content is not used.
      if (!endStream || open.stream.remoteEnded) this.#streamError(id, ErrorCode.PROTOCOL_ERROR);
      else open.stream.remoteEnd();
      return;
    }
    if (id % 2 === 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "even stream id");
    if (id <= this.#lastStreamId) {
      this.#queue(u32Frame(FrameType.RST_STREAM, id, ErrorCode.STREAM_CLOSED));
      return;
    }
    this.#lastStreamId = id;
    if (this.#goingAway) return; // past our GOAWAY: the client retries it elsewhere
    if (tooLarge || raw === undefined) {
      this.sendHeaders(id, [":status", "431"], true);
      if (!endStream) this.#queue(u32Frame(FrameType.RST_STREAM, id, ErrorCode.NO_ERROR));
      return;
    }
    if (this.#streams.size >= this.#o.maxConcurrentStreams) {
      this.#queue(u32Frame(FrameType.RST_STREAM, id, ErrorCode.REFUSED_STREAM));
      return;
    }
    const headers = requestHeaders(raw);
    if (headers === undefined) {
      this.#queue(u32Frame(FrameType.RST_STREAM, id, ErrorCode.PROTOCOL_ERROR));
      return;
    }
    const stream = new H2cStream(this, id, this.#socket, this.#peerInitialWindow);
    this.#streams.set(id, { stream, recv: STREAM_WINDOW, unacked: 0 });
    this.#o.onStream(stream, headers, raw);
    if (endStream && !stream.closed) stream.remoteEnd();
  }

  #onReset(id: number, p: Buffer): void {
    if (p.length !== 4) throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, "RST_STREAM size");
    if (id === 0 || id > this.#lastStreamId) {
      throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on an idle stream");
    }
    const second = Math.floor(performance.now() / 1000);
    if (second !== this.#resetSecond) {
      this.#resetSecond = second;
      this.#resets = 0;
    }
    if (++this.#resets > MAX_RESETS_PER_SECOND) {
      throw new H2ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, "too many stream resets");
    }
    this.#streams.get(id)?.stream.peerReset(p.readUInt32BE(0));
  }

  #onSettings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream");
    if ((flags & Flag.ACK) !== 0) {
      if (p.length !== 0)
        throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ACK size");
      return;
    }
    if (p.length % 6 !== 0)
      throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS size");
    for (let at = 0; at < p.length; at += 6) {
      const key = p.readUInt16BE(at);
      const value = p.readUInt32BE(at + 2);
      if (key === Setting.ENABLE_PUSH && value > 1) {
        throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "ENABLE_PUSH must be 0 or 1");
      } else if (key === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) {
          throw new H2ConnectionError(
            ErrorCode.FLOW_CONTROL_ERROR,
            "INITIAL_WINDOW_SIZE too large",
          );
        }
        const delta = value - this.#peerInitialWindow;
        this.#peerInitialWindow = value;
        for (const { stream } of this.#streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > MAX_WINDOW) {
            throw new H2ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, "stream window too large");
          }
          if (delta > 0 && stream.pending + (stream.ending ? 1 : 0) > 0) this.#sending.add(stream);
        }
      } else if (key === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > 16_777_215) {
          throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "MAX_FRAME_SIZE out of range");
        }
        this.#peerMaxFrame = value;
      }
      // HEADER_TABLE_SIZE: our encoder never uses the dynamic table. The others are advisory.
    }
    this.#queue(frame(FrameType.SETTINGS, Flag.ACK, 0));
    this.#pump();
  }

  #onWindowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4)
      throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, "WINDOW_UPDATE size");
    const increment = p.readUInt32BE(0) & 0x7fff_ffff;
    if (id === 0) {
      if (increment === 0) throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "zero increment");
      this.#connSend += increment;
      if (this.#connSend > MAX_WINDOW) {
        throw new H2ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, "connection window too large");
      }
      for (const { stream } of this.#streams.values()) {
        if (stream.pending > 0) this.#sending.add(stream);
      }
      this.#pump();
      return;
    }
    if (id > this.#lastStreamId) {
      throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
    }
    const entry = this.#streams.get(id);
    if (entry === undefined) return;
    if (increment === 0) {
      this.#streamError(id, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    entry.stream.sendWindow += increment;
    if (entry.stream.sendWindow > MAX_WINDOW) {
      this.#streamError(id, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    if (entry.stream.pending > 0) this.wantsToSend(entry.stream);
  }

  // ---- output ----

  /** Frames the body bytes the windows allow, stream by stream. */
  #pump(): void {
    if (this.#dead) return;
    for (const stream of this.#sending) {
      for (;;) {
        const max = Math.min(stream.sendWindow, this.#connSend, this.#peerMaxFrame);
        if (stream.pending > 0 && max <= 0) break; // wait for WINDOW_UPDATE
        const { data, end } = stream.takeData(max);
        const length = data?.length ?? 0;
        if (data !== undefined || end) {
          const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
          writeFrameHeader(out, 0, length, FrameType.DATA, end ? Flag.END_STREAM : 0, stream.id);
          if (data !== undefined) out.set(data, FRAME_HEADER_BYTES);
          this.#queue(out);
          stream.sendWindow -= length;
          this.#connSend -= length;
        }
        if (end) {
          this.#sending.delete(stream);
          stream.bodySent(true);
          break;
        }
        if (stream.pending === 0) {
          this.#sending.delete(stream);
          if (stream.ending) stream.bodySent(false);
          break;
        }
      }
    }
  }

  #credit(bytes: number): void {
    this.#connUnacked += bytes;
    if (this.#connUnacked >= CONNECTION_WINDOW / 2) {
      this.#queue(u32Frame(FrameType.WINDOW_UPDATE, 0, this.#connUnacked));
      this.#connRecv += this.#connUnacked;
      this.#connUnacked = 0;
    }
  }

  #queue(buf: Buffer): void {
    this.#out.push(buf);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      process.nextTick(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushQueued = false;
    const out = this.#out;
    if (out.length === 0 || this.#socket.destroyed) return;
    this.#out = [];
    this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
  }

  #streamError(id: number, code: number): void {
    const entry = this.#streams.get(id);
    if (entry !== undefined) entry.stream.close(code);
    else this.#queue(u32Frame(FrameType.RST_STREAM, id, code));
  }

  #fail(err: H2ConnectionError): void {
    this.#o.onError?.(err);
    this.#queue(goawayFrame(this.#lastStreamId, err.code, err.message));
    this.#flush();
    this.#dead = true;
    this.#socket.end();
    const t = setTimeout(() => this.#socket.destroy(), 1000);
    t.unref();
    this.#lost();
  }

  #idle(): void {
    if (this.#dead) return;
    if (this.#pingTimer === undefined) {
      this.#pingTimer = setTimeout(() => this.#socket.destroy(), this.#o.pingTimeoutMs);
      this.#pingTimer.unref();
      this.#queue(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    }
    this.close();
  }

  #lost(): void {
    this.#dead = true;
    if (this.#pingTimer !== undefined) clearTimeout(this.#pingTimer);
    for (const { stream } of [...this.#streams.values()]) stream.connectionLost();
    this.#streams.clear();
    this.#sending.clear();
    if (this.#socket.destroyed) {
      const done = this.#onClose;
      this.#onClose = [];
      for (const f of done) f();
    }
  }
}

/**
 * A request's header list as Node's header object (repeated names joined with ", ", cookies
 * with "; ", `set-cookie` as a list), or undefined when it is malformed (RFC 9113 §8.2–8.3):
 * upper-case names, pseudo-headers after regular ones, repeated or unknown pseudo-headers,
 * a missing `:method`, `:scheme` or `:path`, connection-specific headers, `te` other than
 * "trailers".
 */
export function requestHeaders(raw: readonly string[]): IncomingHttpHeaders | undefined {
  const headers: Record<string, string | string[]> = Object.create(null);
  let regular = false;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    if (name.length === 0 || hasUpperCase(name)) return undefined;
    if (name.charCodeAt(0) === 58 /* : */) {
      if (regular || !REQUEST_PSEUDO.has(name) || headers[name] !== undefined) return undefined;
      headers[name] = value;
      continue;
    }
    regular = true;
    if (CONNECTION_SPECIFIC.has(name) || (name === "te" && value !== "trailers")) return undefined;
    const seen = headers[name];
    if (seen === undefined) headers[name] = name === "set-cookie" ? [value] : value;
    else if (Array.isArray(seen)) seen.push(value);
    else headers[name] = `${seen}${name === "cookie" ? "; " : ", "}${value}`;
  }
  const method = headers[":method"];
  if (method === undefined) return undefined;
  if (method !== "CONNECT" && (headers[":scheme"] === undefined || !headers[":path"]))
    return undefined;
  return headers as IncomingHttpHeaders;
}

function hasUpperCase(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

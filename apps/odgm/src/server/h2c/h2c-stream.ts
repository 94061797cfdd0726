// One request stream of the lean HTTP/2 engine, with the part of Node's `ServerHttp2Stream`
// the gRPC fast path and the bridge use: the request body as `data`/`end` events with
// `pause`/`resume` (flow control follows them), and `respond`, `write`, `end`, the trailers
// (`wantTrailers`/`sendTrailers`), `close(code)` and the `drain`, `error` and `close` events.
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { ErrorCode } from "./h2-frames.js";

/** What a stream asks of its connection. */
export interface StreamOwner {
  /** Queues a header block (HEADERS, CONTINUATION when needed) for stream `id`. */
  sendHeaders(id: number, headers: readonly string[], endStream: boolean): void;
  /** Ends stream `id` with an empty DATA frame (trailers with no fields). */
  sendEmptyEnd(id: number): void;
  /** `stream` has body bytes (or its end) waiting to be framed. */
  wantsToSend(stream: H2cStream): void;
  /** Resets stream `id` with `code` and forgets it. */
  reset(stream: H2cStream, code: number): void;
  /** The stream is done both ways: forget it. */
  done(stream: H2cStream): void;
  /** `bytes` of the request body were read by the stream's consumer: the window may grow. */
  consumed(stream: H2cStream, bytes: number): void;
  /** Body bytes streams hold for the peer grew (or shrank) by `delta`. */
  buffered(delta: number): void;
  /** True while the socket's own buffer is full (writes should wait for `drain`). */
  readonly congested: boolean;
}

/** Options of {@link H2cStream.respond}. */
export interface RespondOptions {
  /** The body is followed by trailers: `wantTrailers` fires once the body is out. */
  readonly waitForTrailers?: boolean;
  /** No body: the headers end the stream. */
  readonly endStream?: boolean;
}

/** Bytes a stream queues before `write` answers false. */
const HIGH_WATER = 64 * 1024;

/** Headers as an object (`{name: value}`) or Node's flat list (`[name, value, …]`). */
export type OutgoingHeaderList = readonly string[] | Readonly<Record<string, unknown>>;

function flatten(headers: OutgoingHeaderList): string[] {
  if (Array.isArray(headers)) return headers as string[];
  const out: string[] = [];
  // Pseudo-headers first (RFC 9113 §8.3).
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const name = k.toLowerCase();
    if (Array.isArray(v)) {
      for (const one of v) out.push(name, String(one));
    } else if (name.startsWith(":")) out.unshift(name, String(v));
    else out.push(name, String(v));
  }
  return out;
}

function toBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === "string") return Buffer.from(chunk);
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
}

/** One stream of an {@link H2cConnection}. */
export class H2cStream extends EventEmitter {
  /** The stream identifier. */
  readonly id: number;
  /** What `peer-auth` reads of a Node stream: its connection's socket. */
  readonly session: { readonly socket: Socket };
  /** Reset or failed: nothing more can be sent. */
  destroyed = false;
  /** Closed both ways (or reset). */
  closed = false;
  /** The code it was reset with, once reset. */
  rstCode: number | undefined;
  /** Window the peer gave this stream for our DATA. */
  sendWindow: number;

  readonly #owner: StreamOwner;
  #paused = false;
  #inbox: Buffer[] = [];
  #remoteEnded = false;
  #endEmitted = false;
  #headersSent = false;
  #waitForTrailers = false;
  #outbox: Buffer[] = [];
  #queued = 0;
  #ending = false;
  #localEnded = false;
  #needDrain = false;
  #trailersAsked = false;

  constructor(owner: StreamOwner, id: number, socket: Socket, sendWindow: number) {
    super();
    this.#owner = owner;
    this.id = id;
    this.session = { socket };
    this.sendWindow = sendWindow;
  }

  /** Response headers went out. */
  get headersSent(): boolean {
    return this.#headersSent;
  }

  /** Stops `data` events; the peer's window stops growing until {@link resume}. */
  pause(): this {
    this.#paused = true;
    return this;
  }

  /** Delivers what arrived while paused, then the rest as it comes. */
  resume(): this {
    if (!this.#paused) return this;
    this.#paused = false;
    const inbox = this.#inbox;
    this.#inbox = [];
    for (const chunk of inbox) {
      if (this.#paused) {
        this.#inbox.push(chunk);
        continue;
      }
      this.#deliver(chunk);
    }
    this.#maybeEnd();
    return this;
  }

  /** Sends the response headers. */
  respond(headers: OutgoingHeaderList, options?: RespondOptions): void {
    if (this.destroyed || this.#headersSent) {
      throw new Error(this.destroyed ? "the stream was destroyed" : "headers were sent already");
    }
    this.#headersSent = true;
    this.#waitForTrailers = options?.waitForTrailers === true;
    const end = options?.endStream === true;
    this.#owner.sendHeaders(this.id, flatten(headers), end);
    if (end) this.#endLocal();
  }

  /** Sends informational (1xx) headers before the response. */
  additionalHeaders(headers: OutgoingHeaderList): void {
    if (this.destroyed || this.#headersSent) return;
    this.#owner.sendHeaders(this.id, flatten(headers), false);
  }

  /** Queues body bytes; false when the caller should wait for `drain`. */
  write(chunk: Uint8Array | string): boolean {
    if (this.destroyed || this.#ending) return false;
    if (!this.#headersSent) this.respond([":status", "200"]);
    const buf = toBuffer(chunk);
    if (buf.length > 0) {
      this.#outbox.push(buf);
      this.#queued += buf.length;
      this.#owner.buffered(buf.length);
      this.#owner.wantsToSend(this);
    }
    const ok = this.#queued < HIGH_WATER && !this.#owner.congested;
    if (!ok) this.#needDrain = true;
    return ok;
  }

  /** Queues the last body bytes; the stream ends after them (or after the trailers). */
  end(chunk?: Uint8Array | string): this {
    if (this.destroyed || this.#ending) return this;
    if (!this.#headersSent) this.respond([":status", "200"]);
    if (this.#localEnded) return this;
    const buf = chunk === undefined ? undefined : toBuffer(chunk);
    if (buf !== undefined && buf.length > 0) {
      this.#outbox.push(buf);
      this.#queued += buf.length;
      this.#owner.buffered(buf.length);
    }
    // Ending first: the last bytes can leave with END_STREAM, or the trailers right after.
    this.#ending = true;
    this.#owner.wantsToSend(this);
    return this;
  }

  /** Sends the trailers, ending the stream (only after `wantTrailers`); none: an empty DATA ends it. */
  sendTrailers(trailers: OutgoingHeaderList): void {
    if (this.destroyed || this.#localEnded) throw new Error("the stream ended already");
    const list = flatten(trailers);
    if (list.length === 0) this.#owner.sendEmptyEnd(this.id);
    else this.#owner.sendHeaders(this.id, list, true);
    this.#endLocal();
  }

  /** Resets the stream with `code` (NO_ERROR by default). */
  close(code: number = ErrorCode.NO_ERROR): void {
    if (this.closed) return;
    this.#owner.reset(this, code);
    this.#closeNow(code);
  }

  // ---- the connection's side ----

  /** Frames the connection may send now: takes up to `max` body bytes. */
  takeData(max: number): { data: Buffer | undefined; end: boolean } {
    let data: Buffer | undefined;
    if (max > 0 && this.#queued > 0) {
      const first = this.#outbox[0] as Buffer;
      if (first.length <= max) {
        // Small pieces join into one frame, copied once.
        let n = 1;
        let size = first.length;
        while (n < this.#outbox.length && size + (this.#outbox[n] as Buffer).length <= max) {
          size += (this.#outbox[n] as Buffer).length;
          n++;
        }
        const pieces = this.#outbox.splice(0, n);
        data = n === 1 ? first : Buffer.concat(pieces, size);
      } else {
        data = first.subarray(0, max);
        this.#outbox[0] = first.subarray(max);
      }
      this.#queued -= data.length;
      this.#owner.buffered(-data.length);
      if (this.#needDrain && this.#queued < HIGH_WATER && !this.#owner.congested) {
        this.#needDrain = false;
        process.nextTick(() => this.emit("drain"));
      }
    }
    const end = this.#ending && this.#queued === 0 && !this.#waitForTrailers && !this.#localEnded;
    return { data, end };
  }

  /** Body bytes still to frame. */
  get pending(): number {
    return this.#queued;
  }

  /** All body bytes are framed and the end was asked for. */
  get ending(): boolean {
    return this.#ending && this.#queued === 0;
  }

  /** The last body bytes are out: ends the stream, or asks for the trailers. */
  bodySent(endedByData: boolean): void {
    if (endedByData) {
      this.#endLocal();
      return;
    }
    if (this.#waitForTrailers && !this.#trailersAsked) {
      this.#trailersAsked = true;
      if (this.listenerCount("wantTrailers") > 0) this.emit("wantTrailers");
      else this.sendTrailers([]);
    }
  }

  /** The socket can take more: streams that were refused a write hear `drain`. */
  socketDrained(): void {
    if (this.#needDrain && this.#queued < HIGH_WATER) {
      this.#needDrain = false;
      this.emit("drain");
    }
  }

  /** Request body bytes arrived. */
  receive(chunk: Buffer): void {
    if (this.#paused || this.#inbox.length > 0) this.#inbox.push(chunk);
    else this.#deliver(chunk);
  }

  /** The request ended (END_STREAM). */
  remoteEnd(): void {
    this.#remoteEnded = true;
    this.#maybeEnd();
    if (this.#localEnded) this.#finish();
  }

  /** The peer reset the stream. */
  peerReset(code: number): void {
    if (this.closed) return;
    if (code !== ErrorCode.NO_ERROR && code !== ErrorCode.CANCEL) {
      const err = Object.assign(new Error(`stream reset by the peer with code ${code}`), {
        code: "ERR_HTTP2_STREAM_ERROR",
      });
      if (this.listenerCount("error") > 0) this.emit("error", err);
    }
    this.#closeNow(code);
  }

  /** The connection is gone. */
  connectionLost(): void {
    this.#closeNow(ErrorCode.CANCEL);
  }

  /** True once the request ended and was read. */
  get remoteEnded(): boolean {
    return this.#remoteEnded;
  }

  #deliver(chunk: Buffer): void {
    this.#owner.consumed(this, chunk.length);
    this.emit("data", chunk);
  }

  #maybeEnd(): void {
    if (!this.#remoteEnded || this.#endEmitted || this.#paused || this.#inbox.length > 0) return;
    this.#endEmitted = true;
    this.emit("end");
  }

  #endLocal(): void {
    this.#localEnded = true;
    this.#ending = true;
    if (this.#remoteEnded) this.#finish();
    // The answer is complete while the request is not: the rest of it is not needed.
    else this.close(ErrorCode.NO_ERROR);
  }

  #finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.#owner.done(this);
    process.nextTick(() => this.emit("close"));
  }

  #closeNow(code: number): void {
    if (this.closed) return;
    this.closed = true;
    this.destroyed = true;
    this.rstCode = code;
    this.#outbox = [];
    this.#owner.buffered(-this.#queued);
    this.#queued = 0;
    this.#inbox = [];
    this.#owner.done(this);
    process.nextTick(() => this.emit("close"));
  }
}

// gRPC's length-prefixed messages on an HTTP/2 stream, both ways: one message framed for
// writing, and the request messages of a client stream read as they arrive — frames split
// and decoded chunk by chunk, handed out as an async iterable (one promise per wait, not
// connect's chain of async generators per message). A reader that falls behind pauses the
// stream, so HTTP/2 flow control holds the sender back.
import type { Readable } from "node:stream";
import { type DescMessage, fromBinary, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

/** One gRPC length-prefixed message (flags 0: not compressed). */
export function frameMessage(message: Uint8Array, flags = 0): Buffer {
  const framed = Buffer.allocUnsafe(5 + message.length);
  framed[0] = flags;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/**
 * The refusal of a frame by its 5-byte header — a message over `maxBytes`, or a compressed
 * one (no `grpc-encoding` is taken) — or undefined when the frame may be read.
 */
export function refuseFrameHeader(frame: Buffer, maxBytes: number): ConnectError | undefined {
  const length = frame.readUInt32BE(1);
  if (length > maxBytes) {
    return new ConnectError(
      `message size ${length} is larger than configured readMaxBytes ${maxBytes}`,
      Code.ResourceExhausted,
    );
  }
  if (((frame[0] as number) & 0b1) !== 0) {
    return new ConnectError(
      "protocol error: received compressed message without grpc-encoding",
      Code.Internal,
    );
  }
  return undefined;
}

/**
 * The message of a frame's payload. Bytes that do not parse are the client's error
 * (INVALID_ARGUMENT, as connect-node answers, patched: see pnpm-workspace.yaml).
 */
export function decodeFrame(decode: MessageDecoder, payload: Uint8Array): Message {
  try {
    return decode(payload);
  } catch (err) {
    throw new ConnectError(
      `parse binary: ${err instanceof Error ? err.message : String(err)}`,
      Code.InvalidArgument,
    );
  }
}

/** Reads one message of a type from its protobuf bytes; throws on bytes that do not parse. */
export type MessageDecoder = (bytes: Uint8Array) => Message;

/** protobuf-es's reader of messages of `desc` (reflective: it walks the schema). */
export function schemaDecoder(desc: DescMessage): MessageDecoder {
  return (bytes) => fromBinary(desc, bytes);
}

/** A request body that ends inside a frame. */
export function prematureEnd(): ConnectError {
  return new ConnectError("protocol error: premature end of stream", Code.InvalidArgument);
}

/** Messages decoded but not yet taken at most before the stream is paused. */
const HIGH_WATER = 16;

/**
 * Reads the framed messages of `input` (an HTTP/2 stream's request body). A protocol error
 * (a message over `maxBytes`, a compressed message, bytes that do not parse, a body ending
 * inside a frame, a stream closed before its end) stops the reading, is told to `onError`
 * at once (so the call can be answered even while its handler is not reading), and is
 * thrown by the iterator after the messages before it.
 */
export class GrpcMessageReader implements AsyncIterableIterator<Message> {
  /** Bytes of frames not complete yet, and how many the next frame needs in all. */
  private chunks: Buffer[] = [];
  private size = 0;
  private need = 5;
  private readonly onData = (chunk: Buffer): void => this.push(chunk);
  private readonly queue: Message[] = [];
  private head = 0;
  private waiter:
    | { resolve(r: IteratorResult<Message>): void; reject(e: unknown): void }
    | undefined;
  private ended = false;
  private error: ConnectError | undefined;
  private paused = false;

  constructor(
    private readonly input: Readable,
    private readonly decode: MessageDecoder,
    private readonly maxBytes: number,
    private readonly onError: (err: ConnectError) => void,
  ) {
    input.on("data", this.onData);
    input.once("end", () => {
      if (this.size > 0) {
        this.stop(prematureEnd());
        return;
      }
      this.ended = true;
      this.wake();
    });
    input.once("close", () => {
      if (!this.ended) this.stop(new ConnectError("the client went away", Code.Canceled));
    });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Message>> {
    if (this.head < this.queue.length) return Promise.resolve(this.take());
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The handler stopped reading: the rest of the body is not decoded. */
  return(): Promise<IteratorResult<Message>> {
    this.ended = true;
    this.queue.length = 0;
    this.head = 0;
    this.input.off("data", this.onData);
    this.input.resume();
    return Promise.resolve({ done: true, value: undefined });
  }

  private take(): IteratorResult<Message> {
    const value = this.queue[this.head++] as Message;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
    if (this.paused && this.queue.length - this.head < HIGH_WATER / 2) {
      this.paused = false;
      this.input.resume();
    }
    return { done: false, value };
  }

  private push(chunk: Buffer): void {
    if (this.ended || this.error !== undefined) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
    // Bytes are joined only once a whole frame is there (a large message arrives in many
    // chunks: joining on every one would copy it over and over).
    if (this.size < this.need) return;
    let buf = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks, this.size);
    while (buf.length >= 5) {
      const refused = refuseFrameHeader(buf, this.maxBytes);
      if (refused !== undefined) {
        this.stop(refused);
        return;
      }
      const length = buf.readUInt32BE(1);
      if (buf.length < 5 + length) break;
      try {
        this.queue.push(decodeFrame(this.decode, buf.subarray(5, 5 + length)));
      } catch (err) {
        this.stop(err as ConnectError);
        return;
      }
      buf = buf.subarray(5 + length);
    }
    this.chunks = buf.length === 0 ? [] : [buf];
    this.size = buf.length;
    this.need = buf.length < 5 ? 5 : 5 + buf.readUInt32BE(1);
    if (!this.paused && this.queue.length - this.head >= HIGH_WATER) {
      this.paused = true;
      this.input.pause();
    }
    this.wake();
  }

  private stop(err: ConnectError): void {
    if (this.error !== undefined || this.ended) return;
    this.error = err;
    this.chunks = [];
    this.size = 0;
    this.input.off("data", this.onData);
    this.input.resume();
    this.onError(err);
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    if (w === undefined) return;
    if (this.head < this.queue.length) {
      this.waiter = undefined;
      w.resolve(this.take());
    } else if (this.error !== undefined) {
      this.waiter = undefined;
      w.reject(this.error);
    } else if (this.ended) {
      this.waiter = undefined;
      w.resolve({ done: true, value: undefined });
    }
  }
}

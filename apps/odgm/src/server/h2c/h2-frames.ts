// HTTP/2 frame layout (RFC 9113 §4, §6): the frame types, flags, error codes and settings
// the lean engine and the Raft transport's client use, the writers of frames, and the
// readers both sides share (splitting a read into frames, a HEADERS frame's header block).

/** Frame types (RFC 9113 §6). */
export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

/** Frame flags. */
export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Error codes (RFC 9113 §7). */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** Settings identifiers (RFC 9113 §6.5.2). */
export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** The client connection preface (RFC 9113 §3.4). */
export const CLIENT_PREFACE: Buffer = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** Length of a frame header. */
export const FRAME_HEADER_BYTES = 9;
/** The smallest MAX_FRAME_SIZE, and every peer's until it says otherwise. */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
/** Every window's size until SETTINGS or WINDOW_UPDATE say otherwise. */
export const DEFAULT_WINDOW = 65_535;
/** The largest window (2^31 - 1). */
export const MAX_WINDOW = 0x7fff_ffff;

/** Writes a frame header into `out` at `at`. */
export function writeFrameHeader(
  out: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[at] = (length >>> 16) & 0xff;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId, at + 5);
}

/** One frame with `payload`. */
export function frame(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const length = payload === undefined ? 0 : payload.length;
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  if (payload !== undefined) out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** A frame whose payload is one 32-bit value (RST_STREAM, WINDOW_UPDATE). */
export function u32Frame(type: number, streamId: number, value: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, type, 0, streamId);
  out.writeUInt32BE(value >>> 0, FRAME_HEADER_BYTES);
  return out;
}

/** A SETTINGS frame of `[id, value]` pairs. */
export function settingsFrame(settings: readonly (readonly [number, number])[]): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 6 * settings.length);
  writeFrameHeader(out, 0, 6 * settings.length, FrameType.SETTINGS, 0, 0);
  let at = FRAME_HEADER_BYTES;
  for (const [id, value] of settings) {
    out.writeUInt16BE(id, at);
    out.writeUInt32BE(value >>> 0, at + 2);
    at += 6;
  }
  return out;
}

/** A GOAWAY frame. */
export function goawayFrame(lastStreamId: number, code: number, debug?: string): Buffer {
  const text = debug === undefined ? undefined : Buffer.from(debug, "utf8");
  const length = 8 + (text?.length ?? 0);
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  writeFrameHeader(out, 0, length, FrameType.GOAWAY, 0, 0);
  out.writeUInt32BE(lastStreamId, FRAME_HEADER_BYTES);
  out.writeUInt32BE(code >>> 0, FRAME_HEADER_BYTES + 4);
  if (text !== undefined) out.set(text, FRAME_HEADER_BYTES + 8);
  return out;
}

/** A connection error (RFC 9113 §5.4.1): the connection ends with `code`. */
export class H2ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Hands each complete frame at the start of `buf` to `onFrame`, in order, and returns the
 * bytes they took (an incomplete frame at the end is left for the next read). Stops early
 * when `onFrame` returns false. A frame longer than `maxFrameSize` is a FRAME_SIZE_ERROR
 * ({@link H2ConnectionError}), thrown before any of it is buffered.
 */
export function readFrames(
  buf: Buffer,
  maxFrameSize: number,
  onFrame: (type: number, flags: number, streamId: number, payload: Buffer) => boolean,
): number {
  let at = 0;
  while (buf.length - at >= FRAME_HEADER_BYTES) {
    const length =
      (buf[at] as number) * 65536 + (buf[at + 1] as number) * 256 + (buf[at + 2] as number);
    if (length > maxFrameSize) {
      throw new H2ConnectionError(ErrorCode.FRAME_SIZE_ERROR, `frame of ${length} bytes`);
    }
    if (buf.length - at < FRAME_HEADER_BYTES + length) break;
    const type = buf[at + 3] as number;
    const flags = buf[at + 4] as number;
    const streamId = buf.readUInt32BE(at + 5) & 0x7fff_ffff;
    const payload = buf.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length);
    at += FRAME_HEADER_BYTES + length;
    if (!onFrame(type, flags, streamId, payload)) break;
  }
  return at;
}

/**
 * The header block fragment of a HEADERS frame's payload: its padding and priority fields
 * taken off. Padding longer than the frame is a PROTOCOL_ERROR ({@link H2ConnectionError}).
 */
export function headerBlockFragment(flags: number, payload: Buffer): Buffer {
  let start = 0;
  let end = payload.length;
  if ((flags & Flag.PADDED) !== 0) {
    const pad = payload.length === 0 ? 0 : (payload[0] as number);
    start = 1;
    end -= pad;
  }
  if ((flags & Flag.PRIORITY) !== 0) start += 5;
  if (end < start) {
    throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "padding longer than the frame");
  }
  return payload.subarray(start, end);
}

/** A complete header block, and the stream and END_STREAM flag of its HEADERS frame. */
export interface HeaderBlock {
  readonly streamId: number;
  readonly endStream: boolean;
  readonly block: Buffer;
}

/**
 * A header block that did not fit one HEADERS frame, gathered from the CONTINUATION frames
 * that must follow it with nothing between (RFC 9113 §6.10). A block that ends in its
 * HEADERS frame (END_HEADERS) does not come here.
 */
export class HeaderBlockAssembly {
  #open: { streamId: number; endStream: boolean; parts: Buffer[]; size: number } | undefined;

  /** `tooLarge`: the connection error for a block of more than `maxBytes`. */
  constructor(
    private readonly maxBytes: number,
    private readonly tooLarge: number,
  ) {}

  /** Whether a block waits for its CONTINUATION frames: the next frame must be one. */
  get open(): boolean {
    return this.#open !== undefined;
  }

  /** A HEADERS frame without END_HEADERS: its fragment starts a block. */
  start(streamId: number, endStream: boolean, fragment: Buffer): void {
    this.#open = { streamId, endStream, parts: [fragment], size: fragment.length };
  }

  /**
   * The frame after an open block's last: its CONTINUATION, or a PROTOCOL_ERROR. The whole
   * block once a CONTINUATION ends it (END_HEADERS), else undefined.
   */
  continue(
    type: number,
    flags: number,
    streamId: number,
    payload: Buffer,
  ): HeaderBlock | undefined {
    const open = this.#open;
    if (open === undefined || type !== FrameType.CONTINUATION || streamId !== open.streamId) {
      throw new H2ConnectionError(ErrorCode.PROTOCOL_ERROR, "a header block was interrupted");
    }
    open.parts.push(payload);
    open.size += payload.length;
    if (open.size > this.maxBytes)
      throw new H2ConnectionError(this.tooLarge, "header block too large");
    if ((flags & Flag.END_HEADERS) === 0) return undefined;
    this.#open = undefined;
    return {
      streamId: open.streamId,
      endStream: open.endStream,
      block: Buffer.concat(open.parts, open.size),
    };
  }
}

// The frame readers both HTTP/2 sides share: a byte stream cut anywhere yields the frames
// written into it, in order and whole; an oversized frame and overlong padding are
// connection errors; a header block split over CONTINUATION frames comes out whole.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ErrorCode,
  Flag,
  FrameType,
  frame,
  H2ConnectionError,
  HeaderBlockAssembly,
  headerBlockFragment,
  readFrames,
} from "./h2-frames.js";

interface Read {
  type: number;
  flags: number;
  id: number;
  payload: number[];
}

/** Feeds `chunks` through readFrames as socket reads would arrive, keeping the remainder. */
function readAll(chunks: Buffer[], max = 16_384): Read[] {
  const out: Read[] = [];
  let rest: Buffer | undefined;
  for (const chunk of chunks) {
    const buf = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
    const at = readFrames(buf, max, (type, flags, id, payload) => {
      out.push({ type, flags, id, payload: [...payload] });
      return true;
    });
    rest = at === buf.length ? undefined : buf.subarray(at);
  }
  expect(rest).toBeUndefined();
  return out;
}

describe("readFrames", () => {
  it("yields every frame whole and in order, however the bytes are cut", () => {
    const frameArb = fc.record({
      type: fc.integer({ min: 0, max: 9 }),
      flags: fc.integer({ min: 0, max: 255 }),
      id: fc.integer({ min: 0, max: 0x7fff_ffff }),
      payload: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 300 }),
    });
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }),
        (frames, cuts) => {
          const bytes = Buffer.concat(
            frames.map((f) => frame(f.type, f.flags, f.id, Uint8Array.from(f.payload))),
          );
          const chunks: Buffer[] = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i++) {
            const n = cuts[i % cuts.length] as number;
            chunks.push(bytes.subarray(at, at + n));
            at += n;
          }
          expect(readAll(chunks)).toEqual(frames);
        },
      ),
    );
  });

  it("stops when the callback says so, leaving the rest unread", () => {
    const bytes = Buffer.concat([
      frame(FrameType.PING, 0, 0, Buffer.alloc(8)),
      frame(FrameType.PING, 0, 0, Buffer.alloc(8)),
    ]);
    let seen = 0;
    const at = readFrames(bytes, 16_384, () => {
      seen++;
      return false;
    });
    expect(seen).toBe(1);
    expect(at).toBe(17);
  });

  it("refuses a frame above the size limit from its header alone (FRAME_SIZE_ERROR)", () => {
    const header = frame(FrameType.DATA, 0, 1, Buffer.alloc(100)).subarray(0, 9);
    try {
      readFrames(header, 99, () => true);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(H2ConnectionError);
      expect((err as H2ConnectionError).code).toBe(ErrorCode.FRAME_SIZE_ERROR);
    }
  });
});

describe("headerBlockFragment", () => {
  it("takes padding and the priority fields off", () => {
    const block = Buffer.from("block");
    expect(headerBlockFragment(0, block).toString()).toBe("block");
    const padded = Buffer.concat([Buffer.from([3]), block, Buffer.alloc(3)]);
    expect(headerBlockFragment(Flag.PADDED, padded).toString()).toBe("block");
    const both = Buffer.concat([Buffer.from([2]), Buffer.alloc(5, 9), block, Buffer.alloc(2)]);
    expect(headerBlockFragment(Flag.PADDED | Flag.PRIORITY, both).toString()).toBe("block");
  });

  it("refuses padding longer than the frame (PROTOCOL_ERROR)", () => {
    expect(() => headerBlockFragment(Flag.PADDED, Buffer.from([10, 1, 2]))).toThrow(
      H2ConnectionError,
    );
  });
});

describe("HeaderBlockAssembly", () => {
  it("gives back a block cut anywhere into CONTINUATION frames, whole, with its HEADERS' stream and END_STREAM", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.boolean(),
        (bytes, cuts, endStream) => {
          const block = Buffer.from(bytes);
          const at = [...new Set(cuts.map((c) => c % block.length))].sort((a, b) => a - b);
          const parts = [0, ...at, block.length]
            .slice(1)
            .map((end, i, ends) => block.subarray(i === 0 ? 0 : (ends[i - 1] as number), end));
          const [first, ...rest] = parts.length > 1 ? parts : [block.subarray(0, 0), block];
          const a = new HeaderBlockAssembly(1024, ErrorCode.PROTOCOL_ERROR);
          a.start(5, endStream, first as Buffer);
          let done: ReturnType<typeof a.continue>;
          for (const [i, part] of rest.entries()) {
            expect(a.open).toBe(true);
            const last = i === rest.length - 1;
            done = a.continue(FrameType.CONTINUATION, last ? Flag.END_HEADERS : 0, 5, part);
            expect(done === undefined).toBe(!last);
          }
          expect(a.open).toBe(false);
          expect(done).toEqual({ streamId: 5, endStream, block });
        },
      ),
    );
  });

  it("refuses another frame, or a CONTINUATION of another stream, in the middle of a block", () => {
    for (const [type, id] of [
      [FrameType.DATA, 1],
      [FrameType.HEADERS, 3],
      [FrameType.CONTINUATION, 3],
    ] as const) {
      const a = new HeaderBlockAssembly(1024, ErrorCode.PROTOCOL_ERROR);
      a.start(1, false, Buffer.from([1, 2]));
      let err: unknown;
      try {
        a.continue(type, Flag.END_HEADERS, id, Buffer.from([3]));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(H2ConnectionError);
      expect((err as H2ConnectionError).code).toBe(ErrorCode.PROTOCOL_ERROR);
    }
  });

  it("refuses a block larger than its limit, with the code it was given", () => {
    const a = new HeaderBlockAssembly(4, ErrorCode.ENHANCE_YOUR_CALM);
    a.start(1, false, Buffer.from([1, 2, 3]));
    expect(() => a.continue(FrameType.CONTINUATION, 0, 1, Buffer.from([4]))).not.toThrow();
    let err: unknown;
    try {
      a.continue(FrameType.CONTINUATION, Flag.END_HEADERS, 1, Buffer.from([5]));
    } catch (e) {
      err = e;
    }
    expect((err as H2ConnectionError).code).toBe(ErrorCode.ENHANCE_YOUR_CALM);
  });
});

// The client-stream reader against any split of the byte stream: the messages come out
// whole and in order however the frames are cut into chunks, and every protocol error is
// reported once, after the messages before it.
import { PassThrough } from "node:stream";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, type ConnectError } from "@connectrpc/connect";
import { type RaftEnvelope, RaftEnvelopeSchema } from "@oprc/grpc-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { frameMessage, GrpcMessageReader, schemaDecoder } from "./grpc-framing.js";

const frame = frameMessage;
const envelope = (group: string) =>
  frame(toBinary(RaftEnvelopeSchema, create(RaftEnvelopeSchema, { group })));

/** Feeds `bytes` cut at `cuts` (fractions), then ends; returns what the reader yields. */
async function read(
  bytes: Buffer,
  cuts: number[],
  maxBytes = 1 << 20,
): Promise<{ groups: string[]; error: ConnectError | undefined; told: ConnectError[] }> {
  const input = new PassThrough();
  const told: ConnectError[] = [];
  const reader = new GrpcMessageReader(input, schemaDecoder(RaftEnvelopeSchema), maxBytes, (e) =>
    told.push(e),
  );
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...at, bytes.length]) {
    if (to > from) input.write(bytes.subarray(from, to));
    from = Math.max(from, to);
  }
  input.end();
  const groups: string[] = [];
  try {
    for await (const m of reader) groups.push((m as RaftEnvelope).group);
    return { groups, error: undefined, told };
  } catch (err) {
    return { groups, error: err as ConnectError, told };
  }
}

const cutsArb = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 });

describe("frameMessage", () => {
  it("is a flags byte, the length as u32 big-endian, then the message", () => {
    expect([...frameMessage(Uint8Array.of(7, 8, 9))]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
    const big = frameMessage(new Uint8Array(70_000), 1);
    expect([...big.subarray(0, 5)]).toEqual([1, 0, 1, 0x11, 0x70]);
    expect(big.length).toBe(70_005);
  });
});

describe("GrpcMessageReader", () => {
  it("yields every message whole and in order, however the bytes are chunked", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 300 }), { maxLength: 20 }),
        cutsArb,
        async (groups, cuts) => {
          const out = await read(Buffer.concat(groups.map(envelope)), cuts);
          expect(out.error).toBeUndefined();
          expect(out.told).toEqual([]);
          expect(out.groups).toEqual(groups);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a body ending inside a frame: the messages before it, then INVALID_ARGUMENT", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 50 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 4 }),
        cutsArb,
        async (groups, short, cuts) => {
          const whole = Buffer.concat(groups.map(envelope));
          const out = await read(whole.subarray(0, whole.length - short), cuts);
          expect(out.groups).toEqual(groups.slice(0, -1));
          expect(out.error?.code).toBe(Code.InvalidArgument);
          expect(out.told).toHaveLength(1);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("refuses an oversized, a compressed or an unparsable message, told at once", async () => {
    const ok = envelope("a");
    const big = await read(Buffer.concat([ok, envelope("x".repeat(100))]), [], 50);
    expect(big).toMatchObject({ groups: ["a"], error: { code: Code.ResourceExhausted } });
    const zipped = await read(Buffer.concat([ok, frame(new Uint8Array([10, 0]), 1)]), []);
    expect(zipped).toMatchObject({ groups: ["a"], error: { code: Code.Internal } });
    const junk = await read(Buffer.concat([ok, frame(new Uint8Array([0x0a, 0xff]))]), []);
    expect(junk).toMatchObject({ groups: ["a"], error: { code: Code.InvalidArgument } });
    for (const r of [big, zipped, junk]) expect(r.told).toHaveLength(1);
  });

  it("an oversized frame is refused from its header, before its bytes arrive", async () => {
    const input = new PassThrough();
    const told: ConnectError[] = [];
    const reader = new GrpcMessageReader(input, schemaDecoder(RaftEnvelopeSchema), 1000, (e) =>
      told.push(e),
    );
    const head = Buffer.alloc(5);
    head.writeUInt32BE(1 << 30, 1);
    input.write(head);
    await new Promise((r) => setImmediate(r));
    expect(told.map((e) => e.code)).toEqual([Code.ResourceExhausted]);
    await expect(reader.next()).rejects.toMatchObject({ code: Code.ResourceExhausted });
  });

  it("pauses the input while the handler falls behind, and resumes as it reads", async () => {
    const input = new PassThrough();
    const reader = new GrpcMessageReader(
      input,
      schemaDecoder(RaftEnvelopeSchema),
      1 << 20,
      () => undefined,
    );
    for (let i = 0; i < 40; i++) input.write(envelope(String(i)));
    await new Promise((r) => setImmediate(r));
    expect(input.isPaused()).toBe(true);
    input.end();
    const seen: string[] = [];
    for await (const m of reader) seen.push((m as RaftEnvelope).group);
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
    expect(input.isPaused()).toBe(false);
  });

  it("a stream closed before its end ends the iteration with CANCELED", async () => {
    const input = new PassThrough();
    const reader = new GrpcMessageReader(
      input,
      schemaDecoder(RaftEnvelopeSchema),
      1 << 20,
      () => undefined,
    );
    input.write(envelope("a"));
    input.destroy();
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const m of reader) seen.push((m as RaftEnvelope).group);
      })(),
    ).rejects.toMatchObject({ code: Code.Canceled });
    expect(seen).toEqual(["a"]);
  });
});

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type RaftBatch,
  RaftBatchSchema,
  RaftEntryType,
  type RaftMessage,
  RaftMessageSchema,
  RaftMessageType,
  RaftSnapshotSchema,
} from "@oprc/grpc-api";
import { createMessage, type Message, type MessageType } from "@oprc/raft-log";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkHandDecoder } from "../../test/fixtures/hand-decoder.js";
import { decodeRaftBatch, encodeRaftBatch, fromWireMessage, RaftWireError } from "./raft-wire.js";

const types: MessageType[] = [
  "prop",
  "app",
  "app_resp",
  "vote",
  "vote_resp",
  "pre_vote",
  "pre_vote_resp",
  "snap",
  "snap_resp",
  "heartbeat",
  "heartbeat_resp",
  "transfer_leader",
  "timeout_now",
  "read_index",
  "read_index_resp",
];
const n = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const id = fc.integer({ min: 1, max: 1000 });
const incarnation = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 48 }));
const bytes = fc.uint8Array({ maxLength: 16 });

const messageArb: fc.Arbitrary<Message> = fc
  .record({
    type: fc.constantFrom(...types),
    from: id,
    to: id,
    term: n,
    logTerm: n,
    index: fc.integer({ min: 0, max: 1_000_000 }),
    commit: n,
    reject: fc.boolean(),
    rejectHint: n,
    context: bytes,
    entries: fc.array(
      fc.record({
        term: n,
        type: fc.constantFrom("normal" as const, "conf_change" as const),
        data: bytes,
      }),
      { maxLength: 4 },
    ),
    snap: fc.record({
      index: n,
      term: n,
      data: bytes,
      voters: fc.array(id, { maxLength: 5 }),
      learners: fc.array(id, { maxLength: 3 }),
      autoLeave: fc.boolean(),
    }),
    offset: fc.integer({ min: 0, max: 1000 }),
  })
  .map((r) =>
    createMessage({
      type: r.type,
      from: r.from,
      to: r.to,
      term: r.term,
      logTerm: r.logTerm,
      index: r.index,
      commit: r.commit,
      reject: r.reject,
      rejectHint: r.rejectHint,
      context: r.context,
      entries: r.entries.map((e, i) => ({ ...e, index: r.index + 1 + i })),
      ...(r.type === "snap"
        ? {
            chunkOffset: r.offset,
            chunkTotal: r.offset + r.snap.data.byteLength + 7,
            snapshot: {
              metadata: {
                index: r.snap.index,
                term: r.snap.term,
                confState: {
                  voters: r.snap.voters,
                  learners: r.snap.learners,
                  votersOutgoing: [],
                  learnersNext: [],
                  autoLeave: r.snap.autoLeave,
                },
              },
              data: r.snap.data,
            },
          }
        : {}),
    }),
  );

/** The reference: the message as protobuf-es builds it, field by field (the proto's meaning). */
function reference(m: Message): RaftMessage {
  const big = BigInt;
  const ids = (xs: readonly number[]) => xs.map(big);
  return create(RaftMessageSchema, {
    type: RaftMessageType[m.type.toUpperCase() as keyof typeof RaftMessageType],
    from: big(m.from),
    to: big(m.to),
    term: big(m.term),
    logTerm: big(m.logTerm),
    index: big(m.index),
    entries: m.entries.map((e) => ({
      index: big(e.index),
      term: big(e.term),
      type: e.type === "normal" ? RaftEntryType.NORMAL : RaftEntryType.CONF_CHANGE,
      data: e.data,
    })),
    commit: big(m.commit),
    reject: m.reject,
    rejectHint: big(m.rejectHint),
    context: m.context,
    chunkOffset: big(m.chunkOffset),
    chunkTotal: big(m.chunkTotal),
    ...(m.snapshot === undefined
      ? {}
      : {
          snapshot: {
            index: big(m.snapshot.metadata.index),
            term: big(m.snapshot.metadata.term),
            confState: {
              voters: ids(m.snapshot.metadata.confState.voters),
              learners: ids(m.snapshot.metadata.confState.learners),
              votersOutgoing: ids(m.snapshot.metadata.confState.votersOutgoing),
              learnersNext: ids(m.snapshot.metadata.confState.learnersNext),
              autoLeave: m.snapshot.metadata.confState.autoLeave,
            },
            data: m.snapshot.data,
          },
        }),
  });
}

const groupArb = fc.oneof(fc.constant(""), fc.string({ maxLength: 12 }), fc.constant("ordres/3 ✓"));

describe("raft wire codec", () => {
  it("writes a batch as exactly the bytes protobuf-es writes, and reads every message back", () => {
    fc.assert(
      fc.property(
        id,
        id,
        fc.array(
          fc.record(
            { group: groupArb, message: messageArb, quiesce: fc.boolean() },
            { requiredKeys: ["group", "message"] },
          ),
          { maxLength: 5 },
        ),
        fc.record({ from: incarnation, to: incarnation }),
        (from, to, messages, incarnations) => {
          const bytes = encodeRaftBatch(from, to, messages, incarnations);
          const expected = create(RaftBatchSchema, {
            fromNode: BigInt(from),
            toNode: BigInt(to),
            messages: messages.map((g) => ({
              group: g.group,
              message: reference(g.message),
              quiesce: g.quiesce === true,
            })),
            fromIncarnation: BigInt(incarnations.from),
            toIncarnation: BigInt(incarnations.to),
          });
          expect(Buffer.from(bytes)).toEqual(Buffer.from(toBinary(RaftBatchSchema, expected)));
          const back = fromBinary(RaftBatchSchema, bytes);
          expect([Number(back.fromNode), Number(back.toNode)]).toEqual([from, to]);
          expect(
            back.messages.map((e) => ({
              group: e.group,
              message: fromWireMessage(e.message ?? create(RaftMessageSchema)),
              quiesce: e.quiesce,
            })),
          ).toEqual(messages.map((g) => ({ ...g, quiesce: g.quiesce === true })));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("copies the bytes it reads out of the received frame", () => {
    const m = createMessage({
      type: "app",
      from: 1,
      to: 2,
      context: Uint8Array.of(7),
      entries: [{ index: 1, term: 1, type: "normal", data: Uint8Array.of(1, 2, 3) }],
    });
    const frame = Buffer.from(encodeRaftBatch(1, 2, [{ group: "g", message: m }]));
    const wire = fromBinary(RaftBatchSchema, frame).messages[0]?.message;
    const back = fromWireMessage(wire ?? create(RaftMessageSchema));
    frame.fill(0);
    expect(back.entries[0]?.data).toEqual(Uint8Array.of(1, 2, 3));
    expect(back.context).toEqual(Uint8Array.of(7));
  });

  it("refuses to send a local message type", () => {
    const m = createMessage({ type: "hup", from: 1, to: 1 });
    expect(() => encodeRaftBatch(1, 2, [{ group: "g", message: m }])).toThrow(/is local/);
  });

  it("refuses what the core cannot have sent", () => {
    const ok = reference(createMessage({ type: "app", from: 1, to: 2, term: 3 }));
    const bad = (patch: object) => () =>
      fromWireMessage(create(RaftMessageSchema, { ...ok, ...patch }));
    expect(bad({ type: 0 })).toThrow(RaftWireError);
    expect(bad({ type: 99 })).toThrow(RaftWireError);
    expect(bad({ from: 0n })).toThrow(/sender is 0/);
    expect(bad({ term: 2n ** 60n })).toThrow(/out of range/);
    expect(
      bad({
        entries: [
          { index: 5n, term: 1n, type: 0, data: new Uint8Array() },
          { index: 7n, term: 1n, type: 0, data: new Uint8Array() },
        ],
      }),
    ).toThrow(/consecutive/);
    expect(bad({ entries: [{ index: 5n, term: 1n, type: 9, data: new Uint8Array() }] })).toThrow(
      /unknown type/,
    );
    expect(bad({ snapshot: create(RaftSnapshotSchema, {}) })).toThrow(/carries a snapshot/);
    expect(bad({ type: 8 })).toThrow(/without a snapshot/);
    expect(
      bad({
        type: 8,
        chunkTotal: 2n,
        snapshot: create(RaftSnapshotSchema, { data: new Uint8Array(5) }),
      }),
    ).toThrow(/exceeds its total/);
  });

  describe("decodeRaftBatch", () => {
    const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    const wideBytes = fc.uint8Array({ maxLength: 40 });
    /** Any batch protobuf-es can write: every field, any uint64, any enum number. */
    const anyBatch: fc.Arbitrary<RaftBatch> = fc
      .record({
        fromNode: u64,
        toNode: u64,
        fromIncarnation: u64,
        toIncarnation: u64,
        messages: fc.array(
          fc.record({
            group: fc.string({ maxLength: 12, unit: "grapheme" }),
            quiesce: fc.boolean(),
            message: fc.option(
              fc.record({
                type: fc.integer({ min: 0, max: 40 }),
                from: u64,
                to: u64,
                term: u64,
                logTerm: u64,
                index: u64,
                entries: fc.array(
                  fc.record({
                    index: u64,
                    term: u64,
                    type: fc.integer({ min: 0, max: 3 }),
                    data: wideBytes,
                  }),
                  { maxLength: 4 },
                ),
                commit: u64,
                reject: fc.boolean(),
                rejectHint: u64,
                context: wideBytes,
                snapshot: fc.option(
                  fc.record({
                    index: u64,
                    term: u64,
                    data: wideBytes,
                    confState: fc.option(
                      fc.record({
                        voters: fc.array(u64, { maxLength: 4 }),
                        learners: fc.array(u64, { maxLength: 3 }),
                        votersOutgoing: fc.array(u64, { maxLength: 3 }),
                        learnersNext: fc.array(u64, { maxLength: 2 }),
                        autoLeave: fc.boolean(),
                      }),
                      { nil: undefined },
                    ),
                  }),
                  { nil: undefined },
                ),
                chunkOffset: u64,
                chunkTotal: u64,
              }),
              { nil: undefined },
            ),
          }),
          { maxLength: 4 },
        ),
      })
      .map((init) => create(RaftBatchSchema, init as never));

    it("reads every batch as protobuf-es reads it; damaged ones refused or read alike", () => {
      checkHandDecoder(RaftBatchSchema, decodeRaftBatch, anyBatch);
    });

    it("reads what the encoder writes into the core's messages", () => {
      fc.assert(
        fc.property(
          fc.array(fc.record({ group: groupArb, message: messageArb }), { maxLength: 4 }),
          (messages) => {
            const back = decodeRaftBatch(encodeRaftBatch(1, 2, messages));
            expect(
              back.messages.map((e) => ({
                group: e.group,
                message: fromWireMessage(e.message ?? create(RaftMessageSchema)),
              })),
            ).toEqual(messages);
          },
        ),
        { numRuns: 300 },
      );
    });

    it("refuses malformed batches with the reason", () => {
      const ok = toBinary(
        RaftBatchSchema,
        create(RaftBatchSchema, {
          toNode: 2n,
          messages: [{ group: "g", message: { type: RaftMessageType.APP, term: 1n } }],
        }),
      );
      expect(decodeRaftBatch(ok).messages[0]?.message?.term).toBe(1n);
      // toNode (field 2) as a length-delimited field.
      expect(() => decodeRaftBatch(Uint8Array.of(0x12, 0))).toThrow(/wrong wire type/);
      // An envelope whose length runs past the end.
      expect(() => decodeRaftBatch(Uint8Array.of(0x1a, 9, 0x0a))).toThrow(/past the end/);
      // An envelope with two messages (protobuf would merge them; no node sends that).
      expect(() => decodeRaftBatch(Uint8Array.of(0x1a, 4, 0x12, 0, 0x12, 0))).toThrow(
        /message given twice/,
      );
      // A varint that never ends.
      expect(() => decodeRaftBatch(Uint8Array.of(0x08, 0xff, 0xff))).toThrow();
      // An unknown field (16, varint) is skipped.
      expect(decodeRaftBatch(Uint8Array.of(0x80, 0x01, 5, 0x10, 2)).toNode).toBe(2n);
    });
  });
});

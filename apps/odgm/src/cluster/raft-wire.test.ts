import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { RaftMessageSchema, RaftSnapshotSchema } from "@oprc/grpc-api";
import { createMessage, type Message, type MessageType } from "@oprc/raft-log";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromWireMessage, RaftWireError, toWireMessage } from "./raft-wire.js";

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

describe("raft wire codec", () => {
  it("round-trips every message the core can send, through its bytes", () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        const wire = toWireMessage(m);
        expect(fromWireMessage(wire)).toEqual(m);
        // The message literal encodes exactly as a message built with create() would.
        const bytes = toBinary(RaftMessageSchema, wire);
        expect(bytes).toEqual(toBinary(RaftMessageSchema, create(RaftMessageSchema, wire)));
        expect(fromWireMessage(fromBinary(RaftMessageSchema, bytes))).toEqual(m);
      }),
      { numRuns: 1000 },
    );
  });

  it("refuses what the core cannot have sent", () => {
    const ok = toWireMessage(createMessage({ type: "app", from: 1, to: 2, term: 3 }));
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
});

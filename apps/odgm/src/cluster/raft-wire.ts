// Raft messages on the wire between nodes (proto/oprc-raft.proto) and back. Decoding is
// strict: a message a peer sends that the core cannot have produced (unknown type, numbers
// past 2^53, a snapshot chunk outside its total) is refused with an error naming the
// problem, so a bad peer is logged and ignored, never trusted.
import { create } from "@bufbuild/protobuf";
import {
  type RaftConfState,
  RaftConfStateSchema,
  type RaftEntry,
  RaftEntryType,
  type RaftMessage,
  RaftMessageType,
  RaftSnapshotSchema,
} from "@oprc/grpc-api";
import {
  type ConfState,
  createMessage,
  type Entry,
  type Message,
  type MessageType,
} from "@oprc/raft-log";

const TYPES: readonly [MessageType, RaftMessageType][] = [
  ["prop", RaftMessageType.PROP],
  ["app", RaftMessageType.APP],
  ["app_resp", RaftMessageType.APP_RESP],
  ["vote", RaftMessageType.VOTE],
  ["vote_resp", RaftMessageType.VOTE_RESP],
  ["pre_vote", RaftMessageType.PRE_VOTE],
  ["pre_vote_resp", RaftMessageType.PRE_VOTE_RESP],
  ["snap", RaftMessageType.SNAP],
  ["snap_resp", RaftMessageType.SNAP_RESP],
  ["heartbeat", RaftMessageType.HEARTBEAT],
  ["heartbeat_resp", RaftMessageType.HEARTBEAT_RESP],
  ["transfer_leader", RaftMessageType.TRANSFER_LEADER],
  ["timeout_now", RaftMessageType.TIMEOUT_NOW],
  ["read_index", RaftMessageType.READ_INDEX],
  ["read_index_resp", RaftMessageType.READ_INDEX_RESP],
];
const TO_WIRE = new Map<MessageType, RaftMessageType>(TYPES);
const FROM_WIRE = new Map<RaftMessageType, MessageType>(TYPES.map(([a, b]) => [b, a]));

/** A message a peer sent that cannot be a Raft message of ours. */
export class RaftWireError extends Error {
  override readonly name = "RaftWireError";
}

const big = (n: number): bigint => BigInt(n);
const ids = (xs: readonly number[]): bigint[] => xs.map(big);

/** Whether a message of this type travels between nodes (local ones never do). */
export function isWireMessage(m: Message): boolean {
  return TO_WIRE.has(m.type);
}

/** The wire form of a core message (local message types are refused). */
export function toWireMessage(m: Message): RaftMessage {
  const type = TO_WIRE.get(m.type);
  if (type === undefined) throw new RaftWireError(`message type ${m.type} is local`);
  // Literals, not create(): this runs for every message sent, and every field is set.
  return {
    $typeName: "oprc.RaftMessage",
    type,
    from: big(m.from),
    to: big(m.to),
    term: big(m.term),
    logTerm: big(m.logTerm),
    index: big(m.index),
    entries: m.entries.map(
      (e): RaftEntry => ({
        $typeName: "oprc.RaftEntry",
        index: big(e.index),
        term: big(e.term),
        type: e.type === "normal" ? RaftEntryType.NORMAL : RaftEntryType.CONF_CHANGE,
        data: e.data,
      }),
    ),
    commit: big(m.commit),
    reject: m.reject,
    rejectHint: big(m.rejectHint),
    context: m.context,
    chunkOffset: big(m.chunkOffset),
    chunkTotal: big(m.chunkTotal),
    ...(m.snapshot === undefined
      ? {}
      : {
          snapshot: create(RaftSnapshotSchema, {
            index: big(m.snapshot.metadata.index),
            term: big(m.snapshot.metadata.term),
            confState: toWireConf(m.snapshot.metadata.confState),
            data: m.snapshot.data,
          }),
        }),
  };
}

function toWireConf(c: ConfState): RaftConfState {
  return create(RaftConfStateSchema, {
    voters: ids(c.voters),
    learners: ids(c.learners),
    votersOutgoing: ids(c.votersOutgoing),
    learnersNext: ids(c.learnersNext),
    autoLeave: c.autoLeave,
  });
}

function num(v: bigint, what: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RaftWireError(`${what} ${v} is out of range`);
  return Number(v);
}
function nodeId(v: bigint, what: string): number {
  const n = num(v, what);
  if (n === 0) throw new RaftWireError(`${what} is 0`);
  return n;
}

/** The core message a peer sent, or {@link RaftWireError}. */
export function fromWireMessage(w: RaftMessage): Message {
  const type = FROM_WIRE.get(w.type);
  if (type === undefined) throw new RaftWireError(`unknown message type ${w.type}`);
  const entries: Entry[] = w.entries.map((e: RaftEntry, i) => {
    if (e.type !== RaftEntryType.NORMAL && e.type !== RaftEntryType.CONF_CHANGE) {
      throw new RaftWireError(`entry ${i} has unknown type ${e.type}`);
    }
    return {
      index: num(e.index, "entry index"),
      term: num(e.term, "entry term"),
      type: e.type === RaftEntryType.NORMAL ? "normal" : "conf_change",
      // Copies: decoded bytes may be views into a request buffer that is reused later.
      data: e.data.slice(),
    };
  });
  for (let i = 1; i < entries.length; i++) {
    if ((entries[i] as Entry).index !== (entries[i - 1] as Entry).index + 1) {
      throw new RaftWireError("entries are not consecutive");
    }
  }
  const chunkOffset = num(w.chunkOffset, "chunk offset");
  const chunkTotal = num(w.chunkTotal, "chunk total");
  let snapshot: Message["snapshot"];
  if (w.snapshot !== undefined) {
    if (type !== "snap") throw new RaftWireError(`a ${type} message carries a snapshot`);
    const s = w.snapshot;
    if (chunkOffset + s.data.byteLength > chunkTotal) {
      throw new RaftWireError(
        `snapshot chunk [${chunkOffset}, ${chunkOffset + s.data.byteLength}) exceeds its total ${chunkTotal}`,
      );
    }
    const c = s.confState ?? create(RaftConfStateSchema);
    const list = (xs: readonly bigint[], what: string) => xs.map((x) => nodeId(x, what));
    snapshot = {
      metadata: {
        index: num(s.index, "snapshot index"),
        term: num(s.term, "snapshot term"),
        confState: {
          voters: list(c.voters, "voter"),
          learners: list(c.learners, "learner"),
          votersOutgoing: list(c.votersOutgoing, "outgoing voter"),
          learnersNext: list(c.learnersNext, "next learner"),
          autoLeave: c.autoLeave,
        },
      },
      data: s.data.slice(),
    };
  } else if (type === "snap") {
    throw new RaftWireError("a snap message without a snapshot");
  }
  return createMessage({
    type,
    from: nodeId(w.from, "sender"),
    to: nodeId(w.to, "receiver"),
    term: num(w.term, "term"),
    logTerm: num(w.logTerm, "log term"),
    index: num(w.index, "index"),
    entries,
    commit: num(w.commit, "commit"),
    reject: w.reject,
    rejectHint: num(w.rejectHint, "reject hint"),
    context: w.context.slice(),
    chunkOffset,
    chunkTotal,
    ...(snapshot === undefined ? {} : { snapshot }),
  });
}

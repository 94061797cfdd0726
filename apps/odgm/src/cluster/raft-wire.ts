// Raft messages on the wire between nodes (proto/oprc-raft.proto) and back. Decoding is
// strict: a message a peer sends that the core cannot have produced (unknown type, numbers
// past 2^53, a snapshot chunk outside its total) is refused with an error naming the
// problem, so a bad peer is logged and ignored, never trusted.
import { create } from "@bufbuild/protobuf";
import { varintLength } from "@oprc/granular-key";
import {
  RaftConfStateSchema,
  type RaftEntry,
  RaftEntryType,
  type RaftMessage,
  RaftMessageType,
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

/** Whether a message of this type travels between nodes (local ones never do). */
export function isWireMessage(m: Message): boolean {
  return TO_WIRE.has(m.type);
}

/** One message of a batch, and the group it belongs to. */
export interface GroupMessage {
  readonly group: string;
  readonly message: Message;
  /** The envelope's `quiesce` mark (a heartbeat of an idle group, or its answer). */
  readonly quiesce?: boolean;
}

/**
 * A `RaftBatch` (proto/oprc-raft.proto) of `messages` from node `from` to node `to`, as
 * protobuf bytes: written straight from the core's messages in one pass over a buffer sized
 * up front — the same bytes protobuf-es writes for the same batch (fields in number order,
 * zero values left out, repeated numbers packed), without building its message objects
 * and converting every number to a bigint. This runs for every batch a node sends, and
 * heartbeats of many groups make many. Local message types are refused. `incarnations` are
 * the sender's own and the one it knows the receiver by (0: none).
 */
export function encodeRaftBatch(
  from: number,
  to: number,
  messages: readonly GroupMessage[],
  incarnations: { readonly from: number; readonly to: number } = NO_INCARNATIONS,
): Uint8Array {
  const groups: number[] = [];
  const sizes: number[] = [];
  /** Each envelope's size: group, message, and the `quiesce` mark when set. */
  const envelopes: number[] = [];
  let size =
    uintField(from) + uintField(to) + uintField(incarnations.from) + uintField(incarnations.to);
  for (const { group, message, quiesce } of messages) {
    if (!TO_WIRE.has(message.type)) {
      throw new RaftWireError(`message type ${message.type} is local`);
    }
    const g = Buffer.byteLength(group);
    const m = messageSize(message);
    const e = bytesField(g) + lenField(m) + (quiesce === true ? 2 : 0);
    groups.push(g);
    sizes.push(m);
    envelopes.push(e);
    size += lenField(e);
  }
  const w = new Writer(size);
  w.uint(1, from);
  w.uint(2, to);
  for (const [i, { group, message, quiesce }] of messages.entries()) {
    const g = groups[i] as number;
    const m = sizes[i] as number;
    w.len(3, envelopes[i] as number);
    if (g > 0) {
      w.len(1, g);
      w.pos += w.buf.write(group, w.pos, "utf8");
    }
    w.len(2, m);
    writeMessage(w, message);
    w.bool(3, quiesce === true);
  }
  w.uint(4, incarnations.from);
  w.uint(5, incarnations.to);
  return w.buf;
}

const NO_INCARNATIONS = { from: 0, to: 0 };

const VARINT = 0;
const LEN = 2;

// Sizes of fields with one-byte tags (every field number here is below 16).
/** A uint64 field; zero is left out. */
function uintField(n: number): number {
  return n === 0 ? 0 : 1 + varintLength(n);
}
/** A length-delimited field of `len` bytes, written even when empty (a message field). */
function lenField(len: number): number {
  return 1 + varintLength(len) + len;
}
/** A bytes or string field of `len` bytes; empty is left out. */
function bytesField(len: number): number {
  return len === 0 ? 0 : lenField(len);
}
/** The payload of a packed repeated uint64 field. */
function packedLength(xs: readonly number[]): number {
  let n = 0;
  for (const x of xs) n += varintLength(x);
  return n;
}
/** A packed repeated uint64 field; empty is left out. */
function packedField(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : lenField(packedLength(xs));
}
function entrySize(e: Entry): number {
  return (
    uintField(e.index) +
    uintField(e.term) +
    (e.type === "normal" ? 0 : 2) +
    bytesField(e.data.byteLength)
  );
}
function confSize(c: ConfState): number {
  return (
    packedField(c.voters) +
    packedField(c.learners) +
    packedField(c.votersOutgoing) +
    packedField(c.learnersNext) +
    (c.autoLeave ? 2 : 0)
  );
}
function snapshotSize(s: NonNullable<Message["snapshot"]>): number {
  return (
    uintField(s.metadata.index) +
    uintField(s.metadata.term) +
    lenField(confSize(s.metadata.confState)) +
    bytesField(s.data.byteLength)
  );
}
function messageSize(m: Message): number {
  let n =
    uintField(TO_WIRE.get(m.type) as number) +
    uintField(m.from) +
    uintField(m.to) +
    uintField(m.term) +
    uintField(m.logTerm) +
    uintField(m.index);
  for (const e of m.entries) n += lenField(entrySize(e));
  n += uintField(m.commit) + (m.reject ? 2 : 0) + uintField(m.rejectHint);
  n += bytesField(m.context.byteLength);
  if (m.snapshot !== undefined) n += lenField(snapshotSize(m.snapshot));
  return n + uintField(m.chunkOffset) + uintField(m.chunkTotal);
}

class Writer {
  readonly buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  varint(n: number): void {
    let v = n;
    while (v >= 128) {
      this.buf[this.pos++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }
  /** Field numbers here are all below 16: the tag is one byte. */
  tag(field: number, wireType: number): void {
    this.buf[this.pos++] = (field << 3) | wireType;
  }
  /** The tag and length of a length-delimited field whose `len` bytes follow. */
  len(field: number, len: number): void {
    this.tag(field, LEN);
    this.varint(len);
  }
  uint(field: number, n: number): void {
    if (n === 0) return;
    this.tag(field, VARINT);
    this.varint(n);
  }
  bool(field: number, b: boolean): void {
    if (!b) return;
    this.tag(field, VARINT);
    this.buf[this.pos++] = 1;
  }
  bytes(field: number, b: Uint8Array): void {
    if (b.byteLength === 0) return;
    this.len(field, b.byteLength);
    this.buf.set(b, this.pos);
    this.pos += b.byteLength;
  }
  packed(field: number, xs: readonly number[]): void {
    if (xs.length === 0) return;
    this.len(field, packedLength(xs));
    for (const x of xs) this.varint(x);
  }
}

function writeMessage(w: Writer, m: Message): void {
  w.uint(1, TO_WIRE.get(m.type) as number);
  w.uint(2, m.from);
  w.uint(3, m.to);
  w.uint(4, m.term);
  w.uint(5, m.logTerm);
  w.uint(6, m.index);
  for (const e of m.entries) {
    w.len(7, entrySize(e));
    w.uint(1, e.index);
    w.uint(2, e.term);
    if (e.type !== "normal") w.uint(3, RaftEntryType.CONF_CHANGE);
    w.bytes(4, e.data);
  }
  w.uint(8, m.commit);
  w.bool(9, m.reject);
  w.uint(10, m.rejectHint);
  w.bytes(11, m.context);
  if (m.snapshot !== undefined) {
    const s = m.snapshot;
    w.len(12, snapshotSize(s));
    w.uint(1, s.metadata.index);
    w.uint(2, s.metadata.term);
    const c = s.metadata.confState;
    w.len(3, confSize(c));
    w.packed(1, c.voters);
    w.packed(2, c.learners);
    w.packed(3, c.votersOutgoing);
    w.packed(4, c.learnersNext);
    w.bool(5, c.autoLeave);
    w.bytes(4, s.data);
  }
  w.uint(13, m.chunkOffset);
  w.uint(14, m.chunkTotal);
}

/**
 * A copy as a plain Uint8Array: decoded bytes are views into the received frame (a Buffer,
 * whose `slice` is a view too), which a kept entry would otherwise hold on to.
 */
function copy(b: Uint8Array): Uint8Array {
  return new Uint8Array(b);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function num(v: bigint, what: string): number {
  if (v > MAX_SAFE) throw new RaftWireError(`${what} ${v} is out of range`);
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
      data: copy(e.data),
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
      data: copy(s.data),
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
    context: copy(w.context),
    chunkOffset,
    chunkTotal,
    ...(snapshot === undefined ? {} : { snapshot }),
  });
}

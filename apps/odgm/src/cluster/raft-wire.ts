// Raft messages on the wire between nodes (proto/oprc-raft.proto) and back. Decoding is
// strict: a message a peer sends that the core cannot have produced (unknown type, numbers
// past 2^53, a snapshot chunk outside its total) is refused with an error naming the
// problem, so a bad peer is logged and ignored, never trusted.
import { create } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { varintLength } from "@oprc/granular-key";
import {
  type RaftBatch,
  type RaftConfState,
  RaftConfStateSchema,
  type RaftEntry,
  RaftEntryType,
  type RaftEnvelope,
  type RaftMessage,
  RaftMessageType,
  type RaftSnapshot,
} from "@oprc/grpc-api";
import {
  type ConfState,
  createMessage,
  type Entry,
  type Message,
  type MessageType,
} from "@oprc/raft-log";
import {
  EMPTY_BYTES,
  endAt,
  endOf,
  once,
  type ProtoReadError,
  skipField,
} from "../server/proto-reader.js";

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

/**
 * A `RaftBatch` from its protobuf bytes, as `fromBinary(RaftBatchSchema, bytes)` reads it,
 * except that unknown fields are skipped, not kept. Every batch a node receives on the gRPC
 * fast path is read here: protobuf-es's reflective reader walked the schema for every field
 * of every entry (about 5 % of a follower's main thread at 64 writes in flight), this one
 * takes a third of its time. A singular message field given twice, which protobuf would
 * merge and no node sends, is refused ({@link ProtoReadError}); so are a malformed varint,
 * length or wire type and, as protobuf-es refuses them, a group name that is not UTF-8.
 */
export function decodeRaftBatch(bytes: Uint8Array): RaftBatch {
  const r = new BinaryReader(bytes);
  const batch: RaftBatch = {
    $typeName: "oprc.RaftBatch",
    fromNode: 0n,
    toNode: 0n,
    messages: [],
    fromIncarnation: 0n,
    toIncarnation: 0n,
  };
  while (r.pos < r.len) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.Varint) batch.fromNode = u64(r);
    else if (field === 2 && wt === WireType.Varint) batch.toNode = u64(r);
    else if (field === 3 && wt === WireType.LengthDelimited) batch.messages.push(envelope(r));
    else if (field === 4 && wt === WireType.Varint) batch.fromIncarnation = u64(r);
    else if (field === 5 && wt === WireType.Varint) batch.toIncarnation = u64(r);
    else skipField(r, field, wt, 5);
  }
  return batch;
}

function u64(r: BinaryReader): bigint {
  return BigInt(r.uint64());
}

function envelope(r: BinaryReader): RaftEnvelope {
  const end = endOf(r);
  let group = "";
  let message: RaftMessage | undefined;
  let quiesce = false;
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.LengthDelimited) group = r.string(true);
    else if (field === 2 && wt === WireType.LengthDelimited) {
      once(message, "an envelope's message");
      message = raftMessage(r);
    } else if (field === 3 && wt === WireType.Varint) quiesce = r.bool();
    else skipField(r, field, wt, 3);
  }
  return endAt(r, end, { $typeName: "oprc.RaftEnvelope", group, message, quiesce });
}

function raftMessage(r: BinaryReader): RaftMessage {
  const end = endOf(r);
  const m: RaftMessage = {
    $typeName: "oprc.RaftMessage",
    type: RaftMessageType.UNSPECIFIED,
    from: 0n,
    to: 0n,
    term: 0n,
    logTerm: 0n,
    index: 0n,
    entries: [],
    commit: 0n,
    reject: false,
    rejectHint: 0n,
    context: EMPTY_BYTES,
    snapshot: undefined,
    chunkOffset: 0n,
    chunkTotal: 0n,
  };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (wt === WireType.Varint) {
      switch (field) {
        case 1:
          m.type = r.int32();
          continue;
        case 2:
          m.from = u64(r);
          continue;
        case 3:
          m.to = u64(r);
          continue;
        case 4:
          m.term = u64(r);
          continue;
        case 5:
          m.logTerm = u64(r);
          continue;
        case 6:
          m.index = u64(r);
          continue;
        case 8:
          m.commit = u64(r);
          continue;
        case 9:
          m.reject = r.bool();
          continue;
        case 10:
          m.rejectHint = u64(r);
          continue;
        case 13:
          m.chunkOffset = u64(r);
          continue;
        case 14:
          m.chunkTotal = u64(r);
          continue;
      }
    } else if (wt === WireType.LengthDelimited) {
      if (field === 7) {
        m.entries.push(raftEntry(r));
        continue;
      }
      if (field === 11) {
        m.context = r.bytes();
        continue;
      }
      if (field === 12) {
        once(m.snapshot, "a message's snapshot");
        m.snapshot = raftSnapshot(r);
        continue;
      }
    }
    skipField(r, field, wt, 14);
  }
  return endAt(r, end, m);
}

function raftEntry(r: BinaryReader): RaftEntry {
  const end = endOf(r);
  const e: RaftEntry = {
    $typeName: "oprc.RaftEntry",
    index: 0n,
    term: 0n,
    type: RaftEntryType.NORMAL,
    data: EMPTY_BYTES,
  };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.Varint) e.index = u64(r);
    else if (field === 2 && wt === WireType.Varint) e.term = u64(r);
    else if (field === 3 && wt === WireType.Varint) e.type = r.int32();
    else if (field === 4 && wt === WireType.LengthDelimited) e.data = r.bytes();
    else skipField(r, field, wt, 4);
  }
  return endAt(r, end, e);
}

function raftSnapshot(r: BinaryReader): RaftSnapshot {
  const end = endOf(r);
  const s: RaftSnapshot = {
    $typeName: "oprc.RaftSnapshot",
    index: 0n,
    term: 0n,
    confState: undefined,
    data: EMPTY_BYTES,
  };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.Varint) s.index = u64(r);
    else if (field === 2 && wt === WireType.Varint) s.term = u64(r);
    else if (field === 3 && wt === WireType.LengthDelimited) {
      once(s.confState, "a snapshot's membership");
      s.confState = confState(r);
    } else if (field === 4 && wt === WireType.LengthDelimited) s.data = r.bytes();
    else skipField(r, field, wt, 4);
  }
  return endAt(r, end, s);
}

function confState(r: BinaryReader): RaftConfState {
  const end = endOf(r);
  const c: RaftConfState = {
    $typeName: "oprc.RaftConfState",
    voters: [],
    learners: [],
    votersOutgoing: [],
    learnersNext: [],
    autoLeave: false,
  };
  const lists = [c.voters, c.learners, c.votersOutgoing, c.learnersNext];
  while (r.pos < end) {
    const [field, wt] = r.tag();
    const list = lists[field - 1];
    if (list !== undefined && wt === WireType.Varint) list.push(u64(r));
    else if (list !== undefined && wt === WireType.LengthDelimited) {
      // Packed (as every proto3 writer sends repeated numbers); the unpacked form above.
      const stop = endOf(r);
      while (r.pos < stop) list.push(u64(r));
      endAt(r, stop, undefined);
    } else if (field === 5 && wt === WireType.Varint) c.autoLeave = r.bool();
    else skipField(r, field, wt, 5);
  }
  return endAt(r, end, c);
}

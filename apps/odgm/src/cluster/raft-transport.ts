// Raft messages between nodes over gRPC on the nodes' own ports (oprc.RaftService).
// Each node keeps one long-lived client stream (`Stream`) to each peer, so a batch costs a
// message on an open HTTP/2 stream rather than a call of its own. Messages of every group
// bound for one peer are batched; one batch per peer is being written at a time, and what
// arrives meanwhile forms the next. A failed or stalled stream drops what it carried (Raft
// resends), tells the groups it carried that the peer is unreachable, and is reopened after
// a backoff. The sending half frames gRPC messages and HTTP/2 itself and writes them straight
// to the socket (h2-streaming-call.ts: Node's HTTP/2 client would send them a turn of the event
// loop later); any gRPC server of `oprc.RaftService` can read them. An empty
// batch (`keepAlive`) tells a peer this node is there while no group has anything to send.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type RaftBatch, type RaftBatchAck, RaftBatchAckSchema, RaftService } from "@oprc/grpc-api";
import type { Message } from "@oprc/raft-log";
import { frameMessage } from "../server/grpc-framing.js";
import { H2StreamingCall, type PeerTls } from "./h2-streaming-call.js";
import { encodeRaftBatch, fromWireMessage, type GroupMessage, isWireMessage } from "./raft-wire.js";
import { atEndOfTurn } from "./turn.js";

/** The path of the Raft stream (`oprc.RaftService/Stream`). */
export const RAFT_STREAM_PATH: string = `/${RaftService.typeName}/${RaftService.method.stream.name}`;

/** Options of {@link createRaftTransport}. */
export interface RaftTransportOptions {
  /** This node's id. */
  readonly nodeId: number;
  /** Base URL (`http://host:port`) of a peer, or `undefined` when unknown. */
  readonly addressOf: (peer: number) => string | undefined;
  /** Upper bound of one batch's payload. Default 1 MiB. */
  readonly maxBatchBytes?: number;
  /** Messages queued for one peer at most; older ones are dropped (Raft resends). Default 10000. */
  readonly maxQueued?: number;
  /** Told when a stream to `peer` failed, with the groups it carried. */
  readonly onUnreachable?: (peer: number, groups: readonly string[]) => void;
  /** Told of transport failures (logging). */
  readonly onError?: (err: unknown, peer: number) => void;
  /**
   * A batch the stream has not taken within this time (a peer that stopped reading) fails
   * the stream. Default 5000 ms.
   */
  readonly callTimeoutMs?: number;
  /** Client certificate and CA for `https://` peers (mutual TLS between nodes). */
  readonly tls?: PeerTls;
  /** This node's incarnation, sent with every batch (0 or absent: not told). */
  readonly incarnation?: number;
  /** The incarnation the cluster records for `peer`, sent with every batch to it. */
  readonly incarnationOf?: (peer: number) => number | undefined;
}

/** Per-peer counters. */
export interface PeerTransportStats {
  readonly peer: number;
  /** Batches handed to a stream. */
  readonly batches: number;
  readonly messages: number;
  /** Streams that failed (each also counted when reopened). */
  readonly failures: number;
  readonly dropped: number;
  readonly queued: number;
  /** Streams opened to the peer. */
  readonly streams: number;
  /** The last batch went onto an open stream, and no stream failed since. */
  readonly connected: boolean;
}

/** The sending half of the transport. */
export interface RaftTransport {
  /**
   * Queues the messages of `group` (local message types are ignored). Never blocks.
   * `quiesce` marks their envelopes (a heartbeat of an idle group, or its answer).
   */
  send(group: string, messages: readonly Message[], quiesce?: boolean): void;
  /**
   * Writes an empty batch to each of `peers` this transport wrote nothing to since the
   * previous call. Called at a steady period, it makes each peer hear from this node at
   * least once per two periods, even while every group they share is quiescent (what the
   * peer's liveness check counts on).
   */
  keepAlive(peers: Iterable<number>): void;
  stats(): PeerTransportStats[];
  close(): void;
}

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

/** One open `Stream` call to a peer. */
interface PeerStream {
  /** The call, once its connection is up. */
  readonly opened: Promise<H2StreamingCall>;
  h2: H2StreamingCall | undefined;
  /** Groups whose messages went on this stream (told on failure: those may be lost). */
  readonly groups: Set<string>;
  /** A batch is being written (one at a time). */
  busy: boolean;
  /** Messages of the batch being written (a keep-alive batch has none). */
  writing: number;
}

interface Peer {
  readonly id: number;
  queue: GroupMessage[];
  bytes: number[];
  url: string | undefined;
  stream: PeerStream | undefined;
  /** A flush is queued for the end of this turn ({@link atEndOfTurn}). */
  flushQueued: boolean;
  /** A batch was written since the last {@link RaftTransport.keepAlive}. */
  wrote: boolean;
  backoffMs: number;
  retryAt: number;
  timer: NodeJS.Timeout | undefined;
  batches: number;
  messages: number;
  failures: number;
  dropped: number;
  streams: number;
  connected: boolean;
}

function sizeOf(m: Message): number {
  let n = 64 + m.context.byteLength + (m.snapshot?.data.byteLength ?? 0);
  for (const e of m.entries) n += 24 + e.data.byteLength;
  return n;
}

/** Creates the sending half of the Raft transport. */
export function createRaftTransport(options: RaftTransportOptions): RaftTransport {
  const peers = new Map<number, Peer>();
  const maxBytes = options.maxBatchBytes ?? 1 << 20;
  const maxQueued = options.maxQueued ?? 10_000;
  const timeoutMs = options.callTimeoutMs ?? 5000;
  let closed = false;

  const peerOf = (id: number): Peer => {
    let p = peers.get(id);
    if (p === undefined) {
      p = {
        id,
        queue: [],
        bytes: [],
        url: undefined,
        stream: undefined,
        flushQueued: false,
        wrote: false,
        backoffMs: 0,
        retryAt: 0,
        timer: undefined,
        batches: 0,
        messages: 0,
        failures: 0,
        dropped: 0,
        streams: 0,
        connected: false,
      };
      peers.set(id, p);
    }
    return p;
  };

  /** The peer's address; a peer that moved has its old stream ended quietly. */
  const urlOf = (p: Peer): string | undefined => {
    const url = options.addressOf(p.id);
    if (url === undefined) return undefined;
    if (p.url !== url) {
      // As a stream opened anew would end it: no failure counted.
      if (p.stream !== undefined) cancel(p.stream);
      p.stream = undefined;
      p.url = url;
    }
    return url;
  };

  /** Ends `s` after an error: what it carried may be lost, so its groups hear of it. */
  const fail = (p: Peer, s: PeerStream, err: unknown): void => {
    if (closed || p.stream !== s) return;
    p.stream = undefined;
    p.connected = false;
    // Each stream has its connection: the next one starts on a fresh connection.
    cancel(s);
    p.failures++;
    p.dropped += s.writing;
    p.backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, p.backoffMs * 2));
    p.retryAt = Date.now() + p.backoffMs;
    options.onError?.(err, p.id);
    options.onUnreachable?.(p.id, [...s.groups]);
    schedule(p);
  };

  const streamOf = (p: Peer): PeerStream | undefined => {
    const url = urlOf(p);
    if (url === undefined) return undefined;
    if (p.stream === undefined) {
      const s: PeerStream = {
        // Pings find a dead peer (a cut link looks like silence, not a refusal).
        opened: H2StreamingCall.open({
          url,
          path: RAFT_STREAM_PATH,
          headers: ["content-type", "application/grpc+proto", "te", "trailers"],
          ...(options.tls === undefined ? {} : { tls: options.tls }),
          pingIntervalMs: 2000,
          pingTimeoutMs: 2000,
          connectTimeoutMs: timeoutMs,
        }),
        h2: undefined,
        groups: new Set(),
        busy: false,
        writing: 0,
      };
      p.stream = s;
      p.streams++;
      s.opened.then(
        (h2) => {
          s.h2 = h2;
          // Any end of the call (the peer's answer, a reset, a lost connection) fails it.
          if (p.stream !== s) cancel(s);
          else h2.whenEnded((err) => fail(p, s, err));
        },
        (err: unknown) => fail(p, s, err),
      );
    }
    return p.stream;
  };

  const schedule = (p: Peer): void => {
    if (closed || p.stream?.busy || p.timer !== undefined || p.queue.length === 0) return;
    const wait = Math.max(0, p.retryAt - Date.now());
    p.timer = setTimeout(() => {
      p.timer = undefined;
      flush(p);
    }, wait);
    // A node shutting down must not wait for a backed-off peer.
    p.timer.unref();
  };

  /** Writes the next batch of `p`'s queue; an empty one too when `keepAlive`. */
  const flush = (p: Peer, keepAlive = false): void => {
    if (closed || p.stream?.busy === true || (p.queue.length === 0 && !keepAlive)) return;
    const s = streamOf(p);
    let take = 0;
    let size = 0;
    while (take < p.queue.length && (take === 0 || size + (p.bytes[take] as number) <= maxBytes)) {
      size += p.bytes[take] as number;
      take++;
    }
    const envelopes = p.queue.splice(0, take);
    p.bytes.splice(0, take);
    const groups = new Set(envelopes.map((e) => e.group));
    if (s === undefined) {
      p.dropped += envelopes.length;
      options.onUnreachable?.(p.id, [...groups]);
      return;
    }
    for (const g of groups) s.groups.add(g);
    s.busy = true;
    s.writing = envelopes.length;
    p.wrote = true;
    const stalled = setTimeout(
      () =>
        fail(
          p,
          s,
          new ConnectError(
            `node ${p.id} took no Raft batch for ${timeoutMs} ms`,
            Code.DeadlineExceeded,
          ),
        ),
      timeoutMs,
    );
    stalled.unref();
    const frame = frameMessage(
      encodeRaftBatch(options.nodeId, p.id, envelopes, {
        from: options.incarnation ?? 0,
        to: options.incarnationOf?.(p.id) ?? 0,
      }),
    );
    const written = (err: Error | null | undefined): void => {
      clearTimeout(stalled);
      if (err) {
        fail(p, s, err);
        return;
      }
      if (p.stream !== s) return;
      s.busy = false;
      s.writing = 0;
      p.connected = true;
      p.batches++;
      p.messages += envelopes.length;
      p.backoffMs = 0;
      p.retryAt = 0;
      if (p.queue.length > 0) flush(p);
    };
    // The callback runs once HTTP/2 took the bytes: a peer that stops reading holds it back.
    if (s.h2 !== undefined) s.h2.write(frame, written);
    else {
      s.opened.then(
        (h2) => {
          if (p.stream === s) h2.write(frame, written);
          else clearTimeout(stalled);
        },
        () => clearTimeout(stalled),
      );
    }
  };

  return {
    send(group, messages, quiesce = false) {
      if (closed) return;
      const touched = new Set<Peer>();
      for (const m of messages) {
        if (!isWireMessage(m) || m.to === options.nodeId) continue;
        const p = peerOf(m.to);
        p.queue.push(quiesce ? { group, message: m, quiesce } : { group, message: m });
        p.bytes.push(sizeOf(m));
        if (p.queue.length > maxQueued) {
          p.queue.shift();
          p.bytes.shift();
          p.dropped++;
        }
        touched.add(p);
      }
      for (const p of touched) {
        if (p.retryAt > Date.now()) schedule(p);
        else if (!p.stream?.busy && p.timer === undefined && !p.flushQueued) {
          // Let the rest of this turn's messages (other groups) join the batch. At the end of
          // the turn, not setTimeout(0): a timer waits at least 1 ms, paid on every hop of a
          // commit; and a leader's appends, sent from its end-of-turn Ready, leave in that
          // same pass rather than a turn later (turn.ts).
          p.flushQueued = true;
          atEndOfTurn(() => {
            p.flushQueued = false;
            flush(p);
          });
        }
      }
    },
    keepAlive(ids) {
      if (closed) return;
      const now = Date.now();
      for (const id of ids) {
        if (id === options.nodeId) continue;
        const p = peerOf(id);
        const idle = p.queue.length === 0 && p.timer === undefined && !p.flushQueued;
        if (!p.wrote && idle && p.retryAt <= now) flush(p, true);
        p.wrote = false;
      }
    },
    stats: () =>
      [...peers.values()].map((p) => ({
        peer: p.id,
        batches: p.batches,
        messages: p.messages,
        failures: p.failures,
        dropped: p.dropped,
        queued: p.queue.length,
        streams: p.streams,
        connected: p.connected,
      })),
    close() {
      closed = true;
      for (const p of peers.values()) {
        if (p.timer !== undefined) clearTimeout(p.timer);
        if (p.stream !== undefined) cancel(p.stream);
        p.queue = [];
        p.bytes = [];
      }
    },
  };
}

/** Closes `s` (at once, or once its connection is up); it reports nothing after this. */
function cancel(s: PeerStream): void {
  const close = (h2: H2StreamingCall): void => h2.close();
  if (s.h2 !== undefined) close(s.h2);
  else s.opened.then(close, () => undefined);
}

/** Options of {@link createRaftServiceImpl}. */
export interface RaftServiceOptions {
  readonly nodeId: number;
  /**
   * Delivers a decoded message to its group, with its envelope's `quiesce` mark; false when
   * this node does not host the group.
   */
  readonly deliver: (group: string, message: Message, quiesce: boolean) => boolean;
  /** Told of every batch admitted from node `fromNode` (an empty keep-alive one too). */
  readonly heard?: (fromNode: number) => void;
  /** Told of every message refused as malformed (it is dropped; the node keeps serving). */
  readonly onRejected: (err: unknown, fromNode: number) => void;
  /**
   * Whether to deliver a batch of node `fromNode`, which gave its own incarnation and the one
   * it knows this node by (0: not told): a batch refused is dropped whole. Default: all.
   */
  readonly admit?: (fromNode: number, incarnations: { from: number; to: number }) => boolean;
  /**
   * Ends every open `Stream` call (and any opened later) when aborted: the node is stopping.
   * Its peers see the stream end, count this node unreachable, and reconnect with backoff.
   */
  readonly stop?: AbortSignal;
}

/** The receiving half: the `Stream` method of `oprc.RaftService`, and one batch's delivery. */
export function createRaftServiceImpl(options: RaftServiceOptions): {
  /** Delivers one batch; the answer names the groups this node does not host. */
  receive(req: RaftBatch): RaftBatchAck;
  stream(requests: AsyncIterable<RaftBatch>): Promise<RaftBatchAck>;
} {
  const receive = (req: RaftBatch): RaftBatchAck => {
    if (req.toNode !== BigInt(options.nodeId)) {
      throw new ConnectError(
        `this is node ${options.nodeId}, not node ${req.toNode}: check ODGM_MEMBERS`,
        Code.InvalidArgument,
      );
    }
    const unknown = new Set<string>();
    const from = Number(req.fromNode);
    const incarnations = { from: Number(req.fromIncarnation), to: Number(req.toIncarnation) };
    if (options.admit?.(from, incarnations) === false) return create(RaftBatchAckSchema);
    options.heard?.(from);
    for (const env of req.messages) {
      let m: Message;
      try {
        if (env.message === undefined) throw new Error("envelope without a message");
        m = fromWireMessage(env.message);
        if (m.to !== options.nodeId) throw new Error(`message for node ${m.to}`);
        if (m.from !== from)
          throw new Error(`message from node ${m.from} in a batch of node ${from}`);
      } catch (err) {
        options.onRejected(err, from);
        continue;
      }
      if (!options.deliver(env.group, m, env.quiesce)) unknown.add(env.group);
    }
    // A literal, not protobuf-es's reflective create(): this runs for every batch received.
    return { $typeName: "oprc.RaftBatchAck", unknownGroups: [...unknown] };
  };
  return {
    receive,
    async stream(requests) {
      const unknown = new Set<string>();
      const signal = options.stop;
      const consume = (async () => {
        for await (const req of requests) {
          // Nothing is delivered once the node stops, whatever is still on the way.
          if (signal?.aborted === true) break;
          for (const g of receive(req).unknownGroups) unknown.add(g);
        }
      })();
      if (signal === undefined) await consume;
      else {
        // One race per stream (not per batch): stopping answers the call, which ends the
        // stream and with it the read still waiting on it.
        let onAbort = (): void => {};
        const stopped = new Promise<void>((resolve) => {
          onAbort = resolve;
          if (signal.aborted) resolve();
          else signal.addEventListener("abort", onAbort, { once: true });
        });
        try {
          await Promise.race([consume, stopped]);
        } finally {
          signal.removeEventListener("abort", onAbort);
          if (signal.aborted) consume.catch(() => undefined);
        }
      }
      return create(RaftBatchAckSchema, { unknownGroups: [...unknown] });
    },
  };
}

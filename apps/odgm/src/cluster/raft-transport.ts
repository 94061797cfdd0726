// Raft messages between nodes over gRPC on the nodes' own ports (oprc.RaftService).
// Messages of every group bound for one peer are batched into one call; one call per peer
// is in flight, and what arrives meanwhile forms the next batch. A failed call drops its
// batch (Raft resends), tells the groups the peer is unreachable and backs off.
import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  type RaftBatch,
  type RaftBatchAck,
  RaftBatchAckSchema,
  RaftBatchSchema,
  type RaftEnvelope,
  RaftEnvelopeSchema,
  RaftService,
} from "@oprc/grpc-api";
import type { Message } from "@oprc/raft-log";
import { fromWireMessage, isWireMessage, toWireMessage } from "./raft-wire.js";

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
  /** Told when a batch to `peer` failed, with the groups it carried. */
  readonly onUnreachable?: (peer: number, groups: readonly string[]) => void;
  /** Told of transport failures (logging). */
  readonly onError?: (err: unknown, peer: number) => void;
  /** Per-call deadline. Default 5000 ms. */
  readonly callTimeoutMs?: number;
}

/** Per-peer counters. */
export interface PeerTransportStats {
  readonly peer: number;
  readonly batches: number;
  readonly messages: number;
  readonly failures: number;
  readonly dropped: number;
  readonly queued: number;
}

/** The sending half of the transport. */
export interface RaftTransport {
  /** Queues the messages of `group` (local message types are ignored). Never blocks. */
  send(group: string, messages: readonly Message[]): void;
  stats(): PeerTransportStats[];
  close(): void;
}

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

interface Peer {
  readonly id: number;
  queue: RaftEnvelope[];
  bytes: number[];
  client: Client<typeof RaftService> | undefined;
  session: Http2SessionManager | undefined;
  url: string | undefined;
  inFlight: boolean;
  backoffMs: number;
  retryAt: number;
  timer: NodeJS.Timeout | undefined;
  batches: number;
  messages: number;
  failures: number;
  dropped: number;
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
        client: undefined,
        session: undefined,
        url: undefined,
        inFlight: false,
        backoffMs: 0,
        retryAt: 0,
        timer: undefined,
        batches: 0,
        messages: 0,
        failures: 0,
        dropped: 0,
      };
      peers.set(id, p);
    }
    return p;
  };

  const clientOf = (p: Peer): Client<typeof RaftService> | undefined => {
    const url = options.addressOf(p.id);
    if (url === undefined) return undefined;
    if (p.client === undefined || p.url !== url) {
      p.session?.abort();
      p.url = url;
      // Pings find a dead peer (a cut link looks like silence, not a refusal).
      p.session = new Http2SessionManager(url, {
        pingIntervalMs: 2000,
        pingTimeoutMs: 2000,
        idleConnectionTimeoutMs: 60_000,
      });
      p.client = createClient(
        RaftService,
        createGrpcTransport({ baseUrl: url, sessionManager: p.session }),
      );
    }
    return p.client;
  };

  const schedule = (p: Peer): void => {
    if (closed || p.inFlight || p.timer !== undefined || p.queue.length === 0) return;
    const wait = Math.max(0, p.retryAt - Date.now());
    p.timer = setTimeout(() => {
      p.timer = undefined;
      flush(p);
    }, wait);
    // A node shutting down must not wait for a backed-off peer.
    p.timer.unref();
  };

  const flush = (p: Peer): void => {
    if (closed || p.inFlight || p.queue.length === 0) return;
    const client = clientOf(p);
    let take = 0;
    let size = 0;
    while (take < p.queue.length && (take === 0 || size + (p.bytes[take] as number) <= maxBytes)) {
      size += p.bytes[take] as number;
      take++;
    }
    const envelopes = p.queue.splice(0, take);
    p.bytes.splice(0, take);
    const groups = [...new Set(envelopes.map((e) => e.group))];
    if (client === undefined) {
      p.dropped += envelopes.length;
      options.onUnreachable?.(p.id, groups);
      return;
    }
    p.inFlight = true;
    const batch: RaftBatch = create(RaftBatchSchema, {
      fromNode: BigInt(options.nodeId),
      toNode: BigInt(p.id),
      messages: envelopes,
    });
    client.send(batch, { timeoutMs }).then(
      () => {
        p.inFlight = false;
        p.batches++;
        p.messages += envelopes.length;
        p.backoffMs = 0;
        p.retryAt = 0;
        if (p.queue.length > 0) flush(p);
      },
      (err: unknown) => {
        p.inFlight = false;
        p.failures++;
        p.dropped += envelopes.length;
        p.backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, p.backoffMs * 2));
        p.retryAt = Date.now() + p.backoffMs;
        options.onError?.(err, p.id);
        options.onUnreachable?.(p.id, groups);
        schedule(p);
      },
    );
  };

  return {
    send(group, messages) {
      if (closed) return;
      const touched = new Set<Peer>();
      for (const m of messages) {
        if (!isWireMessage(m) || m.to === options.nodeId) continue;
        const p = peerOf(m.to);
        p.queue.push(create(RaftEnvelopeSchema, { group, message: toWireMessage(m) }));
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
        else if (!p.inFlight) {
          // Let the rest of this turn's messages (other groups) join the batch.
          if (p.timer === undefined) {
            p.timer = setTimeout(() => {
              p.timer = undefined;
              flush(p);
            }, 0);
          }
        }
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
      })),
    close() {
      closed = true;
      for (const p of peers.values()) {
        if (p.timer !== undefined) clearTimeout(p.timer);
        p.session?.abort();
        p.queue = [];
        p.bytes = [];
      }
    },
  };
}

/** Options of {@link createRaftServiceImpl}. */
export interface RaftServiceOptions {
  readonly nodeId: number;
  /** Delivers a decoded message to its group; false when this node does not host it. */
  readonly deliver: (group: string, message: Message) => boolean;
  /** Told of every message refused as malformed (it is dropped; the node keeps serving). */
  readonly onRejected: (err: unknown, fromNode: number) => void;
}

/** The receiving half: the `oprc.RaftService` implementation. */
export function createRaftServiceImpl(options: RaftServiceOptions): {
  send(req: RaftBatch): RaftBatchAck;
} {
  return {
    send(req) {
      if (req.toNode !== BigInt(options.nodeId)) {
        throw new ConnectError(
          `this is node ${options.nodeId}, not node ${req.toNode}: check ODGM_MEMBERS`,
          Code.InvalidArgument,
        );
      }
      const unknown = new Set<string>();
      const from = Number(req.fromNode);
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
        if (!options.deliver(env.group, m)) unknown.add(env.group);
      }
      return create(RaftBatchAckSchema, { unknownGroups: [...unknown] });
    },
  };
}

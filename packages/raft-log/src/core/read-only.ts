import type { Message } from "./message.js";

/** A read the application may serve once it has applied up to `index`. */
export interface ReadState {
  /** The commit index at the time of the request; serve the read once applied ≥ index. */
  readonly index: number;
  /** The request context passed to `readIndex`, echoed back. */
  readonly context: Uint8Array;
}

interface PendingRead {
  readonly index: number;
  readonly req: Message;
  readonly acks: Set<number>;
}

/** Hex key of a context (contexts are compared by content). */
export function contextKey(ctx: Uint8Array): string {
  let s = "";
  for (const b of ctx) s += b.toString(16).padStart(2, "0");
  return s;
}

/**
 * Pending ReadIndex requests on a leader (safe mode, thesis §6.4): each waits for a quorum of
 * heartbeat acknowledgements carrying its context; acknowledging one also releases all the
 * requests queued before it.
 */
export class ReadOnly {
  private readonly pending = new Map<string, PendingRead>();
  private queue: string[] = [];

  add(index: number, req: Message): void {
    const key = contextKey(req.context);
    if (this.pending.has(key)) return;
    this.pending.set(key, { index, req, acks: new Set() });
    this.queue.push(key);
  }

  /** Records an ack for `ctx`; returns the ack set (undefined if unknown). */
  recvAck(id: number, ctx: Uint8Array): ReadonlySet<number> | undefined {
    const p = this.pending.get(contextKey(ctx));
    if (p === undefined) return undefined;
    p.acks.add(id);
    return p.acks;
  }

  /** Removes and returns every request up to and including `ctx`. */
  advance(ctx: Uint8Array): { index: number; req: Message }[] {
    const key = contextKey(ctx);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const done = this.queue.slice(0, at + 1);
    this.queue = this.queue.slice(at + 1);
    const out: { index: number; req: Message }[] = [];
    for (const k of done) {
      const p = this.pending.get(k);
      this.pending.delete(k);
      if (p !== undefined) out.push({ index: p.index, req: p.req });
    }
    return out;
  }

  /** Context of the newest pending request, if any. */
  lastPendingContext(): Uint8Array | undefined {
    const k = this.queue[this.queue.length - 1];
    return k === undefined ? undefined : this.pending.get(k)?.req.context;
  }

  size(): number {
    return this.queue.length;
  }

  clear(): void {
    this.pending.clear();
    this.queue = [];
  }
}

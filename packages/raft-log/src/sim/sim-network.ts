import type { Message } from "../core/message.js";

/** Fault settings of the simulated network (probabilities per message). */
export interface NetworkFaults {
  /** Probability that a message is lost. */
  drop: number;
  /** Probability that a message is delivered twice (the copy with its own delay). */
  duplicate: number;
  /** Largest delivery delay in simulator steps (delays are drawn from [1, maxDelay]). */
  maxDelay: number;
}

/**
 * The simulated network: messages are delivered after a random delay (which reorders them),
 * may be dropped or duplicated, and are subject to directed link cuts checked at delivery
 * time (so a partition also stops messages already in flight). Symmetric partitions cut both
 * directions; partial partitions cut only some links (A–B and B–C up, A–C down).
 */
export class SimNetwork {
  private readonly buckets = new Map<number, Message[]>();
  private readonly cut = new Set<number>();
  /** Messages handed to the network so far. */
  sent = 0;
  /** Messages handed to their receiver so far (duplicates count twice). */
  delivered = 0;
  /** Messages lost so far (dropped at send or stopped by a cut link). */
  dropped = 0;
  /** Called for every message that is lost (dropped at send or stopped by a cut link). */
  onDrop: ((m: Message) => void) | undefined = undefined;

  constructor(
    private readonly random: () => number,
    public faults: NetworkFaults,
  ) {}

  private key(from: number, to: number): number {
    return from * 1024 + to;
  }

  /** Queues `m` for delivery at `now + delay` (or drops/duplicates it). */
  send(m: Message, now: number): void {
    this.sent++;
    if (this.random() < this.faults.drop) {
      this.dropped++;
      this.onDrop?.(m);
      return;
    }
    this.enqueue(m, now);
    if (this.random() < this.faults.duplicate) this.enqueue(m, now);
  }

  private enqueue(m: Message, now: number): void {
    const at = now + 1 + Math.floor(this.random() * Math.max(1, this.faults.maxDelay));
    const b = this.buckets.get(at);
    if (b === undefined) this.buckets.set(at, [m]);
    else b.push(m);
  }

  /** Messages due at `now`, in a random order, minus those crossing a cut link. */
  due(now: number): Message[] {
    const b = this.buckets.get(now);
    if (b === undefined) return [];
    this.buckets.delete(now);
    for (let i = b.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      const t = b[i] as Message;
      b[i] = b[j] as Message;
      b[j] = t;
    }
    const out: Message[] = [];
    for (const m of b) {
      if (this.cut.has(this.key(m.from, m.to))) {
        this.dropped++;
        this.onDrop?.(m);
      } else out.push(m);
    }
    this.delivered += out.length;
    return out;
  }

  /** True when `from → to` is cut. */
  isCut(from: number, to: number): boolean {
    return this.cut.has(this.key(from, to));
  }

  /** Cuts `from → to` (one direction). */
  cutOneWay(from: number, to: number): void {
    this.cut.add(this.key(from, to));
  }

  /** Cuts the link between `a` and `b` in both directions. */
  cutLink(a: number, b: number): void {
    this.cutOneWay(a, b);
    this.cutOneWay(b, a);
  }

  /** Cuts every link between the two groups (a symmetric partition). */
  split(left: readonly number[], right: readonly number[]): void {
    for (const a of left) for (const b of right) this.cutLink(a, b);
  }

  /** Restores every link. */
  heal(): void {
    this.cut.clear();
  }

  /** Number of cut directed links. */
  get cuts(): number {
    return this.cut.size;
  }
}

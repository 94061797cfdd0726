import type { ConfState, Entry } from "../../types.js";
import { InvariantChecker } from "../invariants.js";
import type { Message } from "../message.js";
import { createPrng } from "../prng.js";
import { createRaft, type Raft, type RaftOptions, type Ready } from "../raft.js";
import type { ReadState } from "../read-only.js";
import { TestStorage } from "./test-storage.js";

/** One node of a {@link Network}. */
export interface NetNode {
  raft: Raft;
  storage: TestStorage;
  /** Everything this node applied, in order. */
  applied: Entry[];
  readStates: ReadState[];
  /** Every Ready this node produced (for persistence-order assertions). */
  readies: Ready[];
}

/** Options of {@link Network}. */
export interface NetworkOptions {
  /** Extra Raft options for every node (id and storage are set by the network). */
  readonly raft?: Partial<Omit<RaftOptions, "id" | "storage">>;
  /** Per-node storage (for scenario tables); default: a fresh storage with all ids as voters. */
  readonly storage?: (id: number) => TestStorage;
  /** Run the invariant checker after every delivered message. Default true. */
  readonly checkInvariants?: boolean;
  /** Seed for the random sources of the nodes. Default 1. */
  readonly seed?: number;
}

/**
 * A synchronous in-test network of Raft cores (like etcd's `newNetwork`): it drives each
 * node's Ready cycle (persist → send → apply → advance) and delivers messages FIFO, with
 * link cuts, isolation and a drop filter.
 */
export class Network {
  readonly nodes: Map<number, NetNode> = new Map();
  readonly checker: InvariantChecker = new InvariantChecker();
  private readonly cut = new Set<string>();
  /** Return false to drop a message, or a replacement message to deliver instead. */
  filter: ((m: Message) => boolean | Message) | undefined = undefined;
  /** Every message delivered, in order. */
  readonly log: Message[] = [];
  private readonly options: NetworkOptions;
  private readonly check: boolean;

  constructor(ids: readonly number[], options: NetworkOptions = {}) {
    this.options = options;
    this.check = options.checkInvariants ?? true;
    for (const id of ids) {
      const storage = options.storage?.(id) ?? new TestStorage({ voters: ids });
      this.nodes.set(id, this.makeNode(id, storage));
    }
  }

  private makeNode(id: number, storage: TestStorage, applied = 0): NetNode {
    const seed = (this.options.seed ?? 1) * 7919 + id;
    const raft = createRaft({
      random: createPrng(seed),
      ...this.options.raft,
      id,
      storage,
      ...(applied > 0 ? { applied } : {}),
    });
    return { raft, storage, applied: [], readStates: [], readies: [] };
  }

  node(id: number): NetNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  raft(id: number): Raft {
    return this.node(id).raft;
  }

  /** Adds a node (e.g. before a conf change adds it). */
  add(id: number, confState: Partial<ConfState> = {}): NetNode {
    const n = this.makeNode(id, new TestStorage(confState));
    this.nodes.set(id, n);
    return n;
  }

  /** Runs one Ready cycle on `id`; returns the messages it wants to send. */
  drain(id: number): Message[] {
    const n = this.node(id);
    const out: Message[] = [];
    while (n.raft.hasReady()) {
      const rd = n.raft.ready();
      n.readies.push(rd);
      n.storage.apply({
        ...(rd.hardState ? { hardState: rd.hardState } : {}),
        entries: rd.entries,
        ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
      });
      n.storage.sync();
      out.push(...rd.messages);
      n.applied.push(...rd.committedEntries);
      n.readStates.push(...rd.readStates);
      this.checker.recordApplied(id, rd.committedEntries);
      n.raft.advance();
    }
    return out;
  }

  private deliverable(m: Message): Message | undefined {
    if (!this.nodes.has(m.to)) return undefined;
    if (this.cut.has(`${m.from}-${m.to}`)) return undefined;
    if (this.filter === undefined) return m;
    const r = this.filter(m);
    if (r === false) return undefined;
    return r === true ? m : r;
  }

  /** Delivers `msgs` and everything they cause until the network is quiet. */
  send(...msgs: Message[]): void {
    const queue: Message[] = [...msgs];
    for (const id of [...this.nodes.keys()].sort((a, b) => a - b)) queue.push(...this.drain(id));
    let steps = 0;
    while (queue.length > 0) {
      if (++steps > 100_000) throw new Error("network did not quiesce");
      const m = this.deliverable(queue.shift() as Message);
      if (m === undefined) continue;
      this.log.push(m);
      const n = this.node(m.to);
      n.raft.step(m);
      queue.push(...this.drain(m.to));
      if (this.check) this.checkNow();
    }
  }

  /** Delivers pending output of every node. */
  stabilize(): void {
    this.send();
  }

  /** Runs the invariant checker now. */
  checkNow(): void {
    this.checker.check([...this.nodes.values()].map((n) => n.raft));
  }

  /** Starts an election on `id` and delivers everything. */
  campaign(id: number): void {
    this.raft(id).campaign();
    this.stabilize();
  }

  /** Ticks `id` `n` times, delivering after each tick. */
  tick(id: number, n = 1): void {
    for (let i = 0; i < n; i++) {
      this.raft(id).tick();
      this.stabilize();
    }
  }

  /** Ticks every node `n` times, delivering after each round. */
  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.raft.tick();
      this.stabilize();
    }
  }

  /** Proposes `data` on `id` and delivers. */
  propose(id: number, data: string): void {
    this.raft(id).propose(new TextEncoder().encode(data));
    this.stabilize();
  }

  /** Drops all messages between `a` and `b` (both directions). */
  cutLink(a: number, b: number): void {
    this.cut.add(`${a}-${b}`);
    this.cut.add(`${b}-${a}`);
  }

  /** Cuts `id` from every other node. */
  isolate(id: number): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cutLink(id, other);
  }

  /** Restores every link and clears the filter. */
  recover(): void {
    this.cut.clear();
    this.filter = undefined;
  }

  /**
   * Crashes `id` (losing unsynced writes when `lose` is set on its storage) and restarts it
   * from storage; applied restarts at the snapshot index.
   */
  restart(id: number): NetNode {
    const old = this.node(id);
    old.storage.crash();
    const n = this.makeNode(id, old.storage);
    this.nodes.set(id, n);
    this.checker.restarted(id);
    return n;
  }

  /** Ids of nodes that currently believe they lead. */
  leaders(): number[] {
    return [...this.nodes.entries()].filter(([, n]) => n.raft.role === "leader").map(([id]) => id);
  }
}

/** Encodes a string payload. */
export function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** Decodes applied normal entries to strings (skipping empty no-ops). */
export function appliedData(n: NetNode): string[] {
  return n.applied
    .filter((e) => e.type === "normal" && e.data.byteLength > 0)
    .map((e) => new TextDecoder().decode(e.data));
}

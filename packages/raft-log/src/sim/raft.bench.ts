// Committed proposals/s and commit latency of one 3-node Raft group in one process: three
// pure cores, each with its own RocksDB log store (one shared database), an in-process
// real-time network (messages delivered on the next event-loop turn), 1 and 64 concurrent
// clients, group commit on (the three stores share one worker-thread committer) and off
// (each save is its own synced WriteBatch). Baseline in the same run: raw synced
// WriteBatches of the same store's bytes (one entry + hard state) issued one at a time.
//
//   cd packages/raft-log && vitest bench --run src/sim/raft.bench.ts
//
// Cases run interleaved, round after round (this VM's fsync latency swings by 10x over
// seconds); rates are totals over totals, latencies are percentiles over all rounds.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "vitest";
import type { Message } from "../core/message.js";
import { createPrng } from "../core/prng.js";
import { createRaft, type Raft } from "../core/raft.js";
import { createGroupCommitter } from "../storage/group-committer.js";
import {
  encodeEntryValue,
  encodeHardState,
  entryKey,
  groupPrefix,
  RecordType,
  recordKey,
} from "../storage/log-record-codec.js";
import { openRocksLogDatabase, type RocksWrite } from "../storage/rocks-log-database.js";
import { createRocksLogStore, type RocksLogStore } from "../storage/rocks-log-store.js";
import type { HardState, Snapshot } from "../types.js";

const ROUNDS = Number(process.env.RAFT_BENCH_ROUNDS ?? 3);
const ROUND_MS = Number(process.env.RAFT_BENCH_ROUND_MS ?? 1500);
const PAYLOAD = 128;
const TICK_MS = 10;

const dir = mkdtempSync(join(tmpdir(), "raft-group-bench-"));
const database = await openRocksLogDatabase({ path: dir });
const committer = createGroupCommitter(database, { thread: "worker" });

interface BenchNode {
  readonly id: number;
  readonly raft: Raft;
  readonly store: RocksLogStore;
  busy: boolean;
  hard: HardState;
}

class Group {
  readonly nodes = new Map<number, BenchNode>();
  readonly waiters = new Map<number, () => void>();
  private outbox: Message[] = [];
  private flushing = false;
  active = false;
  private timer: NodeJS.Timeout | undefined;
  private nextId = 1;

  static async create(tag: string, groupCommit: boolean): Promise<Group> {
    const g = new Group();
    const boot: Snapshot = {
      metadata: {
        index: 1,
        term: 1,
        confState: {
          voters: [1, 2, 3],
          learners: [],
          votersOutgoing: [],
          learnersNext: [],
          autoLeave: false,
        },
      },
      data: new Uint8Array(0),
    };
    for (const id of [1, 2, 3]) {
      const store = await createRocksLogStore({
        database,
        groupId: `${tag}/n${id}`,
        ...(groupCommit ? { committer } : {}),
      });
      await store.save({ snapshot: boot, hardState: { term: 1, vote: 0, commit: 1 } });
      const raft = createRaft({
        id,
        storage: store,
        electionTick: 100,
        heartbeatTick: 10,
        random: createPrng(id),
      });
      g.nodes.set(id, { id, raft, store, busy: false, hard: { term: 1, vote: 0, commit: 1 } });
    }
    g.timer = setInterval(() => {
      if (!g.active) return;
      for (const n of g.nodes.values()) {
        n.raft.tick();
        g.pump(n);
      }
    }, TICK_MS);
    const first = g.nodes.get(1) as BenchNode;
    first.raft.campaign();
    g.pump(first);
    while (first.raft.role !== "leader") await new Promise((r) => setTimeout(r, 5));
    return g;
  }

  leader(): BenchNode {
    for (const n of this.nodes.values()) if (n.raft.role === "leader") return n;
    throw new Error("no leader");
  }

  private send(m: Message): void {
    this.outbox.push(m);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const batch = this.outbox;
      this.outbox = [];
      const touched = new Set<BenchNode>();
      for (const msg of batch) {
        const n = this.nodes.get(msg.to);
        if (n === undefined) continue;
        n.raft.step(msg);
        touched.add(n);
      }
      for (const n of touched) this.pump(n);
    });
  }

  /** The Ready loop of one node: persist (synced), send, apply, advance. */
  pump(n: BenchNode): void {
    if (n.busy) return;
    n.busy = true;
    void (async () => {
      try {
        while (n.raft.hasReady()) {
          const rd = n.raft.ready();
          const hs = rd.hardState;
          const termVote = hs !== undefined && (hs.term !== n.hard.term || hs.vote !== n.hard.vote);
          if (hs !== undefined) n.hard = hs;
          // Thesis §10.2.1: the leader's appends may leave while its own write is in flight.
          const early = n.raft.role === "leader" && !termVote;
          const later: Message[] = [];
          for (const m of rd.messages) {
            if (early && (m.type === "app" || m.type === "heartbeat")) this.send(m);
            else later.push(m);
          }
          // A Ready that only moves the commit index needs no write (commit is volatile).
          if (rd.mustSync) {
            await n.store.save({
              entries: rd.entries,
              ...(hs !== undefined ? { hardState: hs } : {}),
              ...(rd.snapshot !== undefined ? { snapshot: rd.snapshot } : {}),
            });
          }
          for (const m of later) this.send(m);
          if (n.raft.role === "leader") {
            for (const e of rd.committedEntries) {
              if (e.data.byteLength < 4) continue;
              const id = new DataView(e.data.buffer, e.data.byteOffset).getUint32(0);
              const w = this.waiters.get(id);
              if (w !== undefined) {
                this.waiters.delete(id);
                w();
              }
            }
          }
          n.raft.advance();
        }
      } finally {
        n.busy = false;
      }
    })();
  }

  /** Proposes one payload on the leader; resolves when the leader applied it. */
  propose(): Promise<void> {
    const id = this.nextId++;
    const data = new Uint8Array(PAYLOAD);
    new DataView(data.buffer).setUint32(0, id);
    const done = new Promise<void>((resolve) => this.waiters.set(id, resolve));
    const l = this.leader();
    l.raft.propose(data);
    this.pump(l);
    return done;
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }
}

interface Tally {
  ops: number;
  ms: number;
  lat: number[];
}

async function runClients(g: Group, clients: number, ms: number, t: Tally): Promise<void> {
  g.active = true;
  const end = performance.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        await g.propose();
        t.lat.push(performance.now() - s);
        t.ops++;
      }
    }),
  );
  t.ms += performance.now() - t0;
  g.active = false;
}

let rawIndex = 0;
async function runRaw(ms: number, t: Tally, entriesPerBatch: number): Promise<void> {
  const prefix = groupPrefix("raw");
  const payload = new Uint8Array(PAYLOAD);
  const end = performance.now() + ms;
  const t0 = performance.now();
  while (performance.now() < end) {
    const s = performance.now();
    const ops: RocksWrite[] = [];
    for (let k = 0; k < entriesPerBatch; k++) {
      const index = ++rawIndex;
      ops.push({
        type: "put",
        key: entryKey(prefix, index),
        value: encodeEntryValue({ index, term: 1, type: "normal", data: payload }),
      });
    }
    ops.push({
      type: "put",
      key: recordKey(prefix, RecordType.hardState),
      value: encodeHardState({ term: 1, vote: 1, commit: rawIndex }),
    });
    await database.write(ops, true);
    t.lat.push(performance.now() - s);
    t.ops += entriesPerBatch;
  }
  t.ms += performance.now() - t0;
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};

afterAll(async () => {
  await committer.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test("raft group: committed proposals/s vs raw synced WriteBatch", async () => {
  const off = await Group.create("gc-off", false);
  const on = await Group.create("gc-on", true);
  const cases: { name: string; run: (t: Tally) => Promise<void>; t: Tally; unit: string }[] = [
    {
      name: "raw synced WriteBatch, 1 entry + hard state, one at a time (baseline)",
      run: (t) => runRaw(ROUND_MS, t, 1),
      t: { ops: 0, ms: 0, lat: [] },
      unit: "writes",
    },
    {
      name: "raw synced WriteBatch, 64 entries + hard state, one at a time",
      run: (t) => runRaw(ROUND_MS, t, 64),
      t: { ops: 0, ms: 0, lat: [] },
      unit: "entries",
    },
    ...[false, true].flatMap((gc) =>
      [1, 64].map((clients) => ({
        name: `3-node group, ${clients} client${clients > 1 ? "s" : ""}, group commit ${gc ? "on" : "off"}`,
        run: (t: Tally) => runClients(gc ? on : off, clients, ROUND_MS, t),
        t: { ops: 0, ms: 0, lat: [] as number[] },
        unit: "commits",
      })),
    ),
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) await c.run(c.t);
  }
  off.close();
  on.close();
  const base = (cases[0] as (typeof cases)[number]).t;
  const baseRate = (base.ops / base.ms) * 1000;
  const lines = [
    "| case | per second | ratio to raw 1-entry batch | p50 ms | p99 ms |",
    "|---|---|---|---|---|",
  ];
  for (const c of cases) {
    const rate = (c.t.ops / c.t.ms) * 1000;
    lines.push(
      `| ${c.name} | ${rate.toFixed(0)} ${c.unit} | ${(rate / baseRate).toFixed(2)}× | ${pct(c.t.lat, 50).toFixed(2)} | ${pct(c.t.lat, 99).toFixed(2)} |`,
    );
  }
  const st = committer.stats();
  lines.push(
    "",
    `group committer: ${st.writes} writes in ${st.batches} synced batches (avg ${st.averageBatchSize.toFixed(1)}, max ${st.maxBatchSize})`,
  );
  console.log(lines.join("\n"));
}, 600_000);

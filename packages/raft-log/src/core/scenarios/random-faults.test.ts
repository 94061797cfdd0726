import { describe, expect, it } from "vitest";
import type { ConfChange } from "../../types.js";
import type { Message } from "../message.js";
import { createPrng } from "../prng.js";
import { isRaftError } from "../raft-error.js";
import { Network } from "../testing/network.js";

// A small randomized fault run over the in-test network (the full simulator lives in src/sim):
// drops, delays/reordering, duplicates, partitions, restarts, compaction, leader transfer and
// membership churn, with the scenario-28 invariants checked after every delivered message.
const SEEDS = Number(process.env.RAFT_CORE_FUZZ_SEEDS ?? 6);

function run(seed: number): void {
  const rnd = createPrng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const ids = [1, 2, 3, 4, 5];
  const nt = new Network(ids, { seed, raft: { snapshotChunkSize: 16, maxSizePerMsg: 64 } });
  let delayed: Message[] = [];
  const faulty = (m: Message): boolean => {
    const r = rnd();
    if (r < 0.05) return false;
    if (r < 0.12) {
      delayed.push(m);
      return false;
    }
    if (r < 0.15) delayed.push(m);
    return true;
  };
  nt.filter = faulty;
  let n = 0;
  for (let step = 0; step < 250; step++) {
    const a = rnd();
    const lead = nt.leaders()[0];
    try {
      if (a < 0.45) nt.tickAll();
      else if (a < 0.7) {
        if (lead !== undefined) nt.propose(lead, `s${seed}-${n++}`);
      } else if (a < 0.78) {
        const batch = delayed;
        delayed = [];
        for (let i = batch.length - 1; i > 0; i--) {
          const j = Math.floor(rnd() * (i + 1));
          [batch[i], batch[j]] = [batch[j] as Message, batch[i] as Message];
        }
        nt.send(...batch);
      } else if (a < 0.82) {
        nt.recover();
        nt.filter = faulty;
        if (rnd() < 0.6) nt.isolate(pick(ids));
      } else if (a < 0.85) {
        nt.restart(pick(ids));
      } else if (a < 0.89) {
        const node = nt.node(pick(ids));
        const st = node.raft.status();
        if (st.applied > node.storage.snapshot().metadata.index) {
          node.storage.compact(
            st.applied,
            new TextEncoder().encode(`snap-${st.applied}`),
            node.raft.status().confState,
          );
        }
      } else if (a < 0.93) {
        if (lead !== undefined) nt.raft(lead).transferLeader(pick(ids));
        nt.stabilize();
      } else if (lead !== undefined) {
        const target = pick(ids.filter((id) => id !== lead));
        const cs = nt.raft(lead).status().confState;
        const cc: ConfChange = cs.learners.includes(target)
          ? { changes: [{ type: "add_voter", nodeId: target }], transition: "auto" }
          : cs.voters.length > 3
            ? {
                changes: [{ type: "add_learner", nodeId: target }],
                transition: rnd() < 0.5 ? "auto" : "joint",
              }
            : { changes: [{ type: "add_voter", nodeId: target }], transition: "auto" };
        nt.raft(lead).proposeConfChange(cc);
        nt.stabilize();
      }
    } catch (e) {
      if (!isRaftError(e) || e.code === "invariant_violation" || e.code === "invalid_state")
        throw e;
    }
  }
  // liveness: heal, then a leader is elected and a proposal commits
  nt.recover();
  let done = false;
  let target = 0;
  for (let t = 0; t < 200 && !done; t++) {
    nt.tickAll();
    const lead = nt.leaders()[0];
    if (lead !== undefined && target === 0) {
      try {
        nt.propose(lead, "final");
        target = nt.raft(lead).status().lastIndex;
      } catch (e) {
        if (!isRaftError(e)) throw e;
      }
    }
    if (target > 0) {
      done = [...nt.nodes.values()].some(
        (x) => x.raft.role === "leader" && x.raft.status().commit >= target,
      );
    }
  }
  expect(done, `seed ${seed}: no progress after healing`).toBe(true);
}

describe("randomized faults over the core", () => {
  const seeds = Array.from({ length: SEEDS }, (_, i) => i + 1);
  it.each(seeds)("seed %i: invariants hold and the cluster recovers", (seed) => run(seed), 60_000);
});

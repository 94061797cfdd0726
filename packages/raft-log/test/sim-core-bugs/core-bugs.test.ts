import { describe, expect, it } from "vitest";
import { createMessage } from "../../src/core/message.js";
import { createPrng } from "../../src/core/prng.js";
import { createRaft, type Ready } from "../../src/core/raft.js";
import { Network } from "../../src/core/testing/network.js";
import { createMemoryLogStore } from "../../src/storage/memory-log-store.js";
import type { Entry } from "../../src/types.js";

// Minimal reproductions of core bugs the simulator found (src/sim/README.md, "Findings").
// They are `it.fails`: green while the bug is present, red once the core is fixed — then
// turn them into plain `it` (and drop the seeds from test/sim-ci/known-core-bugs.ts).

const voters = [1, 2, 3];
const ent = (index: number, term: number): Entry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array([index]),
});

describe("core bugs found by the simulator", () => {
  it("an acknowledged entry survives a snapshot whose tail was kept (bug C, found at seed 384)", () => {
    const noop = (): void => {};
    const cs = { voters, learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false };
    const store = createMemoryLogStore({ durability: "manual" });
    store
      .save({
        snapshot: { metadata: { index: 1, term: 1, confState: cs }, data: new Uint8Array(0) },
        entries: [ent(2, 1), ent(3, 1)],
        hardState: { term: 1, vote: 0, commit: 1 },
      })
      .catch(noop);
    store.sync();
    const r = createRaft({ id: 2, storage: store, random: createPrng(1) });
    const app = (prev: number, es: Entry[], commit: number) =>
      createMessage({
        type: "app",
        from: 1,
        to: 2,
        term: 1,
        index: prev,
        logTerm: 1,
        entries: es,
        commit,
      });
    const save = (rd: Ready): void => {
      store
        .save({
          entries: rd.entries,
          ...(rd.hardState ? { hardState: rd.hardState } : {}),
          ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
        })
        .catch(noop);
    };
    r.step(app(3, [ent(4, 1)], 2));
    const f1 = r.ready(); // entry 4 being written
    save(f1);
    r.step(app(4, [ent(5, 1)], 2)); // entry 5 arrives meanwhile
    r.step(
      createMessage({
        type: "snap",
        from: 1,
        to: 2,
        term: 1,
        snapshot: { metadata: { index: 3, term: 1, confState: cs }, data: new Uint8Array([9]) },
        chunkOffset: 0,
        chunkTotal: 1,
      }),
    ); // matches the log at 3: entries 4 and 5 are kept
    store.sync();
    r.advance(); // entry 4 durable: it leaves the unstable tail, the snapshot is still unstable
    const f2 = r.ready(); // snapshot 3 + entry 5, and the acknowledgement of entry 5
    expect(f2.messages.some((m) => m.type === "app_resp" && !m.reject && m.index === 5)).toBe(true);
    save(f2);
    // A duplicate of the first append arrives while f2 is being written: the log cannot see
    // entry 4 (neither unstable nor, while a snapshot is unstable, in storage), finds a
    // "conflict" at 4 and truncates the acknowledged entry 5.
    r.step(app(3, [ent(4, 1)], 3));
    store.sync();
    r.advance();
    expect(r.status().lastIndex).toBe(5); // bug: 4
  });

  it("a follower whose in-flight appends were all lost is retried (bug A, max in-flight window)", () => {
    const nt = new Network(voters, { raft: { maxInflightMsgs: 1 } });
    nt.campaign(1);
    let dropped = false;
    nt.filter = (m) => {
      if (!dropped && m.type === "app" && m.to === 3 && m.entries.length > 0) {
        dropped = true;
        return false;
      }
      return true;
    };
    nt.propose(1, "x");
    expect(dropped).toBe(true);
    nt.recover();
    nt.tickAll(50); // 50 heartbeat rounds, no message lost
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex); // bug: stuck
  });
});

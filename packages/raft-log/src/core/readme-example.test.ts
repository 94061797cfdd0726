import { describe, expect, it } from "vitest";
import { createPrng } from "./prng.js";
import { createRaft, type Raft } from "./raft.js";
import { TestStorage } from "./testing/test-storage.js";

// The example from the core's README section, run as a test: a 3-node cluster driven by
// hand — persist, send, apply, advance.
describe("README example", () => {
  it("elects a leader and commits a proposal", () => {
    const voters = [1, 2, 3];
    const stores = new Map(voters.map((id) => [id, new TestStorage({ voters })]));
    const nodes = new Map<number, Raft>(
      voters.map((id) => [
        id,
        createRaft({ id, storage: stores.get(id) as TestStorage, random: createPrng(id) }),
      ]),
    );
    const applied: string[] = [];
    const pump = (): void => {
      for (let busy = true; busy; ) {
        busy = false;
        for (const [id, node] of nodes) {
          while (node.hasReady()) {
            busy = true;
            const rd = node.ready();
            stores.get(id)?.apply(rd); // 1. persist (one synced write)
            for (const m of rd.messages) nodes.get(m.to)?.step(m); // 2. send
            for (const e of rd.committedEntries) {
              if (id === 1 && e.data.byteLength > 0) applied.push(new TextDecoder().decode(e.data));
            }
            node.advance(); // 3. applied
          }
        }
      }
    };
    for (let t = 0; t < 50 && ![...nodes.values()].some((n) => n.role === "leader"); t++) {
      for (const n of nodes.values()) n.tick();
      pump();
    }
    const leader = [...nodes.values()].find((n) => n.role === "leader") as Raft;
    leader.propose(new TextEncoder().encode("hello"));
    pump();
    expect(applied).toEqual(["hello"]);
  });
});

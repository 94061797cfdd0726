import { expect, it } from "vitest";
// The README's example, verbatim apart from this import line.
import {
  createMemoryLogStore,
  createPrng,
  createRaft,
  type MemoryLogStore,
  type Raft,
} from "./index.js";

it("README example: a 3-node group elects a leader and commits a proposal", async () => {
  const voters = [1, 2, 3];
  const bootstrap = {
    metadata: {
      index: 1,
      term: 1,
      confState: { voters, learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false },
    },
    data: new Uint8Array(),
  };
  const stores = voters.map(() => createMemoryLogStore());
  for (const store of stores) await store.save({ snapshot: bootstrap });
  const nodes = voters.map((id, i) =>
    createRaft({ id, storage: stores[i] as MemoryLogStore, random: createPrng(id) }),
  );
  const applied: string[] = [];
  // Drive every node: persist its Ready (one write), send its messages, apply, advance.
  async function pump(): Promise<void> {
    for (let busy = true; busy; ) {
      busy = false;
      for (const [i, node] of nodes.entries()) {
        while (node.hasReady()) {
          busy = true;
          const rd = node.ready();
          await stores[i]?.save(rd);
          for (const m of rd.messages) nodes[m.to - 1]?.step(m);
          for (const e of rd.committedEntries) {
            if (i === 0 && e.data.byteLength > 0) applied.push(new TextDecoder().decode(e.data));
          }
          node.advance();
        }
      }
    }
  }
  for (let t = 0; t < 100 && !nodes.some((n) => n.role === "leader"); t++) {
    for (const node of nodes) node.tick();
    await pump();
  }
  const leader = nodes.find((n) => n.role === "leader") as Raft;
  leader.propose(new TextEncoder().encode("hello"));
  await pump();
  expect(applied).toEqual(["hello"]);
});

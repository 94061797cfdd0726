import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type GroupLeadership, planHandoffs } from "./leader-balance.js";

/** Groups replicated on every one of `nodes`, led as `leaders` says. */
function fullyReplicated(nodes: number, leaders: readonly number[]): GroupLeadership[] {
  return leaders.map((leader, i) => ({
    group: `g/${i}`,
    leader,
    candidates: Array.from({ length: nodes }, (_, k) => k + 1).filter((id) => id !== leader),
  }));
}

function counts(groups: readonly GroupLeadership[]): Map<number, number> {
  const c = new Map<number, number>();
  for (const g of groups) c.set(g.leader, (c.get(g.leader) ?? 0) + 1);
  return c;
}

/** Every node plans a round in turn and its hand-offs take effect; returns the rounds run. */
function settle(groups: GroupLeadership[], nodes: number): number {
  for (let round = 1; round <= 50; round++) {
    let moved = 0;
    for (let self = 1; self <= nodes; self++) {
      for (const h of planHandoffs(self, groups)) {
        const i = groups.findIndex((g) => g.group === h.group);
        const g = groups[i] as GroupLeadership;
        groups[i] = {
          ...g,
          leader: h.to,
          candidates: [...g.candidates.filter((id) => id !== h.to), g.leader],
        };
        moved++;
      }
    }
    if (moved === 0) return round;
  }
  return Number.POSITIVE_INFINITY;
}

describe("planHandoffs", () => {
  it("hands six groups led by one of three nodes out two and two in one round", () => {
    const groups = fullyReplicated(3, [1, 1, 1, 1, 1, 1]);
    expect(planHandoffs(1, groups)).toEqual([
      { group: "g/0", to: 2 },
      { group: "g/1", to: 3 },
      { group: "g/2", to: 2 },
      { group: "g/3", to: 3 },
    ]);
    // Nodes that lead no more than the others hand nothing over.
    expect(planHandoffs(2, groups)).toEqual([]);
    expect(planHandoffs(1, fullyReplicated(3, [1, 1, 2, 2, 3]))).toEqual([]);
  });

  it("hands over only to candidates: not to a voter that is down or behind", () => {
    const groups = fullyReplicated(3, [1, 1, 1, 1]).map((g) => ({ ...g, candidates: [3] }));
    expect(planHandoffs(1, groups)).toEqual([
      { group: "g/0", to: 3 },
      { group: "g/1", to: 3 },
    ]);
    expect(
      planHandoffs(
        1,
        groups.map((g) => ({ ...g, candidates: [] })),
      ),
    ).toEqual([]);
  });

  it("settles with leaderships at most one apart, each hand-off narrowing the gap (property)", () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 2, max: 5 })
          .chain((nodes) =>
            fc.tuple(
              fc.constant(nodes),
              fc.array(fc.integer({ min: 1, max: nodes }), { minLength: 1, maxLength: 40 }),
            ),
          ),
        ([nodes, leaders]) => {
          const groups = fullyReplicated(nodes, leaders);
          // One node's plan never leaves it leading fewer than any node it hands to.
          for (let self = 1; self <= nodes; self++) {
            const before = counts(groups);
            const plan = planHandoffs(self, groups);
            const after = new Map(before);
            for (const h of plan) {
              after.set(self, (after.get(self) ?? 0) - 1);
              after.set(h.to, (after.get(h.to) ?? 0) + 1);
            }
            for (const h of plan)
              expect(after.get(self) ?? 0).toBeGreaterThanOrEqual((after.get(h.to) ?? 0) - 1);
          }
          expect(settle(groups, nodes)).toBeLessThanOrEqual(3);
          const c = [...Array.from({ length: nodes }, (_, k) => counts(groups).get(k + 1) ?? 0)];
          expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });
});

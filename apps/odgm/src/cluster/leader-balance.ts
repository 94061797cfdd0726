// Spreading the leadership of Raft groups over their voters. Groups elect whoever times out
// first, so the node that started first tends to lead most of them (161 of 260 groups on
// one node of three, measured), and serves most of the writes. Each node plans from what it
// sees — the leader of every group it holds a replica of — and hands over only groups it
// leads, each to a voter that leads at least two fewer: every hand-off narrows the gap
// between two nodes, so the rounds of all nodes settle instead of trading groups back and forth.

/** One group as the planning node sees it. */
export interface GroupLeadership {
  readonly group: string;
  /** Its leader (0: none known). */
  readonly leader: number;
  /** Its voters that could take over now (answering, caught up), other than its leader. */
  readonly candidates: readonly number[];
}

/** A planned hand-off of `group` to node `to`. */
export interface Handoff {
  readonly group: string;
  readonly to: number;
}

/**
 * The hand-offs node `self` makes this round: for each group it leads, in order, the
 * candidate leading the fewest groups, while that is at least two fewer than `self` leads
 * (counting the hand-offs planned before it).
 */
export function planHandoffs(self: number, groups: readonly GroupLeadership[]): Handoff[] {
  const led = new Map<number, number>();
  for (const g of groups) if (g.leader !== 0) led.set(g.leader, (led.get(g.leader) ?? 0) + 1);
  let own = led.get(self) ?? 0;
  const out: Handoff[] = [];
  for (const g of groups) {
    if (g.leader !== self) continue;
    let to = 0;
    let fewest = own - 1;
    for (const id of g.candidates) {
      const n = led.get(id) ?? 0;
      if (id !== self && n < fewest) {
        to = id;
        fewest = n;
      }
    }
    if (to === 0) continue;
    out.push({ group: g.group, to });
    own--;
    led.set(to, fewest + 1);
  }
  return out;
}

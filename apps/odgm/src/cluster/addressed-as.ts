// How a node learns that the cluster refuses it: the incarnation its peers address it by.
// Every Raft batch names the incarnation its sender knows the receiver by (0: none
// recorded). A peer that has applied this node's re-adding later than another may address
// it by the old one for a moment, so only a peer that keeps doing so counts.

/** One peer that addresses this node by another incarnation than its own. */
export interface Misaddressed {
  readonly peer: number;
  readonly incarnation: number;
}

/** The incarnations this node's peers address it by, batch after batch. */
export class AddressedAs {
  private readonly peers = new Map<number, { incarnation: number; since: number; last: number }>();

  /**
   * @param own this node's incarnation.
   * @param sustainMs how long a peer must go on addressing it by another incarnation (and
   *   how recently it must still have) to count.
   */
  constructor(
    private readonly own: number,
    private readonly sustainMs = 2000,
  ) {}

  /** Peer `peer` sent a batch addressed to incarnation `to` at `now` (ms). */
  note(peer: number, to: number, now: number): void {
    if (to === 0 || to === this.own) {
      this.peers.delete(peer);
      return;
    }
    const known = this.peers.get(peer);
    if (known?.incarnation === to) known.last = now;
    else this.peers.set(peer, { incarnation: to, since: now, last: now });
  }

  /** A peer that has addressed this node by another incarnation for `sustainMs`, until lately. */
  misaddressedBy(now: number): Misaddressed | undefined {
    for (const [peer, a] of this.peers) {
      if (now - a.since >= this.sustainMs && now - a.last < this.sustainMs) {
        return { peer, incarnation: a.incarnation };
      }
    }
    return undefined;
  }
}

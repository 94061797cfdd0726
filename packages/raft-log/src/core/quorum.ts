/** Outcome of a vote tally. */
export type VoteResult = "pending" | "lost" | "won";

/**
 * The largest index acknowledged by a majority of `voters`, given each voter's acked index.
 * An empty voter set returns `Infinity` (it never constrains a joint configuration).
 */
export function majorityCommitted(
  voters: ReadonlySet<number>,
  acked: (id: number) => number | undefined,
): number {
  if (voters.size === 0) return Number.POSITIVE_INFINITY;
  const idx: number[] = [];
  for (const id of voters) idx.push(acked(id) ?? 0);
  idx.sort((a, b) => b - a);
  const q = Math.floor(voters.size / 2) + 1;
  return idx[q - 1] ?? 0;
}

/** Tallies `votes` (true = granted) in a simple majority of `voters`. Empty set wins. */
export function majorityVote(
  voters: ReadonlySet<number>,
  votes: (id: number) => boolean | undefined,
): VoteResult {
  if (voters.size === 0) return "won";
  let yes = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes(id);
    if (v === undefined) missing++;
    else if (v) yes++;
  }
  const q = Math.floor(voters.size / 2) + 1;
  if (yes >= q) return "won";
  if (yes + missing >= q) return "pending";
  return "lost";
}

/**
 * A (possibly joint) voter configuration: `incoming` is C_new (or the only config);
 * `outgoing` is C_old during joint consensus and empty otherwise.
 */
export interface JointConfig {
  readonly incoming: ReadonlySet<number>;
  readonly outgoing: ReadonlySet<number>;
}

/** Commit index of a joint config: the smaller of the two majorities (§6, thesis ch. 4). */
export function jointCommitted(
  cfg: JointConfig,
  acked: (id: number) => number | undefined,
): number {
  const a = majorityCommitted(cfg.incoming, acked);
  const b = majorityCommitted(cfg.outgoing, acked);
  const c = Math.min(a, b);
  return c === Number.POSITIVE_INFINITY ? 0 : c;
}

/** Vote result of a joint config: won only when both majorities won. */
export function jointVote(
  cfg: JointConfig,
  votes: (id: number) => boolean | undefined,
): VoteResult {
  const a = majorityVote(cfg.incoming, votes);
  const b = majorityVote(cfg.outgoing, votes);
  if (a === b) return a;
  if (a === "lost" || b === "lost") return "lost";
  return "pending";
}

/** All voter ids of a joint config, ascending (deterministic iteration order). */
export function jointIds(cfg: JointConfig): number[] {
  const s = new Set<number>([...cfg.incoming, ...cfg.outgoing]);
  return [...s].sort((a, b) => a - b);
}

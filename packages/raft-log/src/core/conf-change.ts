import type { ConfChange, ConfState } from "../types.js";
import { RaftError } from "./raft-error.js";

/** Encodes/decodes {@link ConfChange} entry payloads. */
export interface ConfChangeCodec {
  encode(cc: ConfChange): Uint8Array;
  decode(data: Uint8Array): ConfChange;
}

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/**
 * Default conf-change payload codec: canonical JSON (fixed key order). Deterministic, so every
 * replica writes the same bytes; swap in a binary codec through `RaftOptions.confChangeCodec`.
 */
export const jsonConfChangeCodec: ConfChangeCodec = {
  encode(cc: ConfChange): Uint8Array {
    const changes = cc.changes.map((c) => ({ type: c.type, nodeId: c.nodeId }));
    return enc.encode(JSON.stringify({ changes, transition: cc.transition }));
  },
  decode(data: Uint8Array): ConfChange {
    try {
      const v = JSON.parse(dec.decode(data)) as ConfChange;
      if (!Array.isArray(v.changes)) throw new Error("changes is not an array");
      return v;
    } catch (e) {
      throw new RaftError("invalid_argument", "undecodable conf change", { cause: e });
    }
  },
};

/** True when `cc` leaves a joint configuration (an empty change list). */
export function isLeaveJoint(cc: ConfChange): boolean {
  return cc.changes.length === 0;
}

/** True when `cc` enters joint consensus rather than being a single-server change. */
export function entersJoint(cc: ConfChange): boolean {
  return cc.transition !== "auto" || cc.changes.length > 1;
}

const sorted = (s: Iterable<number>): number[] => [...new Set(s)].sort((a, b) => a - b);

function applyChanges(
  voters: Set<number>,
  learners: Set<number>,
  learnersNext: Set<number>,
  outgoing: ReadonlySet<number>,
  cc: ConfChange,
): void {
  for (const ch of cc.changes) {
    const id = ch.nodeId;
    if (!Number.isSafeInteger(id) || id <= 0) {
      throw new RaftError("invalid_argument", `invalid node id ${id}`);
    }
    switch (ch.type) {
      case "add_voter":
        voters.add(id);
        learners.delete(id);
        learnersNext.delete(id);
        break;
      case "add_learner":
        voters.delete(id);
        learners.delete(id);
        learnersNext.delete(id);
        // A voter of C_old cannot become a learner until the joint config is left.
        if (outgoing.has(id)) learnersNext.add(id);
        else learners.add(id);
        break;
      case "remove":
        voters.delete(id);
        learners.delete(id);
        learnersNext.delete(id);
        break;
      default:
        throw new RaftError("invalid_argument", `unknown conf change type ${String(ch.type)}`);
    }
  }
}

/**
 * Computes the configuration after applying `cc` to `cs`. Throws `conf_change_pending` when
 * the change is not valid from `cs` (entering joint twice, leaving when not joint, a
 * single-server change touching more than one voter, or an empty voter set).
 */
export function applyConfChange(cs: ConfState, cc: ConfChange): ConfState {
  const joint = cs.votersOutgoing.length > 0;
  if (isLeaveJoint(cc)) {
    if (!joint) throw new RaftError("conf_change_pending", "not in a joint configuration");
    const learners = new Set([...cs.learners, ...cs.learnersNext]);
    return {
      voters: [...cs.voters],
      learners: sorted(learners),
      votersOutgoing: [],
      learnersNext: [],
      autoLeave: false,
    };
  }
  if (joint) throw new RaftError("conf_change_pending", "already in a joint configuration");
  const voters = new Set(cs.voters);
  const learners = new Set(cs.learners);
  const learnersNext = new Set<number>();
  if (entersJoint(cc)) {
    const outgoing = new Set(cs.voters);
    applyChanges(voters, learners, learnersNext, outgoing, cc);
    if (voters.size === 0) throw new RaftError("conf_change_pending", "no voters would remain");
    return {
      voters: sorted(voters),
      learners: sorted(learners),
      votersOutgoing: sorted(outgoing),
      learnersNext: sorted(learnersNext),
      autoLeave: cc.transition === "auto" || cc.transition === "joint",
    };
  }
  applyChanges(voters, learners, learnersNext, new Set(), cc);
  let diff = 0;
  for (const id of voters) if (!cs.voters.includes(id)) diff++;
  for (const id of cs.voters) if (!voters.has(id)) diff++;
  if (diff > 1) {
    throw new RaftError("conf_change_pending", "a single-server change may alter one voter");
  }
  if (voters.size === 0) throw new RaftError("conf_change_pending", "no voters would remain");
  return {
    voters: sorted(voters),
    learners: sorted(learners),
    votersOutgoing: [],
    learnersNext: [],
    autoLeave: false,
  };
}

import type { Entry } from "../../types.js";
import { createMessage, type Message } from "../message.js";
import { createPrng } from "../prng.js";
import { createRaft, type Raft, type RaftOptions, type Ready } from "../raft.js";
import { TestStorage } from "./test-storage.js";

/** A single core plus its storage, driven by hand (etcd-style unit scenarios). */
export interface Harness {
  raft: Raft;
  storage: TestStorage;
  /** Everything applied so far. */
  applied: Entry[];
  readies: Ready[];
}

/** Creates a core with `voters` (and an optional prepared storage). */
export function newHarness(
  id: number,
  voters: readonly number[],
  opts: Partial<Omit<RaftOptions, "id" | "storage">> & { storage?: TestStorage } = {},
): Harness {
  const { storage: given, ...rest } = opts;
  const storage = given ?? new TestStorage({ voters });
  const raft = createRaft({ random: createPrng(id * 31 + 7), ...rest, id, storage });
  return { raft, storage, applied: [], readies: [] };
}

/** Runs the Ready cycle (persist+sync, apply, advance) and returns the outgoing messages. */
export function take(h: Harness): Message[] {
  const out: Message[] = [];
  while (h.raft.hasReady()) {
    const rd = h.raft.ready();
    h.readies.push(rd);
    h.storage.apply({
      ...(rd.hardState ? { hardState: rd.hardState } : {}),
      entries: rd.entries,
      ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
    });
    h.storage.sync();
    out.push(...rd.messages);
    h.applied.push(...rd.committedEntries);
    h.raft.advance();
  }
  return out;
}

/** Shorthand for building a message. */
export const msg: typeof createMessage = createMessage;

/** Entries with the given terms starting at `from` (empty payloads). */
export function ents(from: number, terms: readonly number[]): Entry[] {
  return terms.map((term, i) => ({
    index: from + i,
    term,
    type: "normal" as const,
    data: new Uint8Array(0),
  }));
}

/** All entries of a core's log. */
export function logTerms(r: Raft): number[] {
  const st = r.status();
  const out: number[] = [];
  for (let i = st.firstIndex; i <= st.lastIndex; i++) out.push(r.entryAt(i)?.term ?? -1);
  return out;
}

/**
 * Makes `h` leader of a one-round election in which all peers grant; returns the messages
 * the new leader sends (its first appends).
 */
export function electLeader(h: Harness): Message[] {
  h.raft.campaign();
  for (let round = 0; round < 2 && h.raft.role !== "leader"; round++) {
    const out = take(h);
    for (const m of out) {
      if (m.type === "pre_vote" || m.type === "vote") {
        h.raft.step(
          msg({
            type: m.type === "vote" ? "vote_resp" : "pre_vote_resp",
            from: m.to,
            to: h.raft.id,
            term: m.term,
          }),
        );
      }
    }
  }
  return take(h);
}

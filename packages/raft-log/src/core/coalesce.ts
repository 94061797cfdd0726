// Fewer, larger messages out of one Ready. Under load a leader proposes entry after entry
// between two Readys and sends each to every follower as an append of its own, plus an
// empty append each time the commit index moves; every follower answers each one. The
// messages of a Ready that continue one another say the same as one message would, so they
// are sent as one: the transport, the follower and the leader then handle one message per
// Ready and peer instead of two per entry.

import type { Entry } from "../types.js";
import type { Message } from "./message.js";

/**
 * A message being built: the first message of a run, plus what later ones added. Merged
 * fields live here until the run ends, so a run of n messages makes one new message.
 */
interface Slot {
  readonly message: Message;
  merged: boolean;
  /** `app_resp`: the highest acknowledged index. */
  index: number;
  commit: number;
  /** `app`: a private copy of the entries once something was appended to them. */
  entries: Entry[] | undefined;
  /** `app`: payload bytes of the entries (-1: not counted yet). */
  bytes: number;
}

function entryBytes(entries: readonly Entry[]): number {
  let n = 0;
  for (const e of entries) n += e.data.byteLength;
  return n;
}

/**
 * Merges runs of messages to the same peer, keeping the order of what each peer receives:
 *
 * - appends whose entries continue one another (the later one's previous index and term are
 *   the earlier one's last entry) become one append carrying all the entries and the later
 *   commit index, while the entries' data stay within `maxBytes` (an empty append, a
 *   commit-index update, always joins);
 * - accepting append responses become one carrying the highest index and commit index: an
 *   acknowledgement covers every index below it, so the leader learns the same.
 *
 * Only messages with nothing else to the same peer between them merge, and only within one
 * term; rejections, snapshots, votes, heartbeats and the rest pass through unchanged.
 */
export function coalesceMessages(messages: readonly Message[], maxBytes: number): Message[] {
  if (messages.length < 2) return messages as Message[];
  const slots: Slot[] = [];
  const lastTo = new Map<number, Slot>();
  for (const m of messages) {
    const prev = lastTo.get(m.to);
    if (prev !== undefined && merge(prev, m, maxBytes)) continue;
    const slot: Slot = {
      message: m,
      merged: false,
      index: m.index,
      commit: m.commit,
      entries: undefined,
      bytes: -1,
    };
    slots.push(slot);
    lastTo.set(m.to, slot);
  }
  if (slots.length === messages.length) return messages as Message[];
  return slots.map((s) =>
    !s.merged
      ? s.message
      : { ...s.message, index: s.index, commit: s.commit, entries: s.entries ?? s.message.entries },
  );
}

/** Folds `m` into `slot` when it continues it; false when it must stay a message of its own. */
function merge(slot: Slot, m: Message, maxBytes: number): boolean {
  const a = slot.message;
  if (a.type !== m.type || a.term !== m.term || a.from !== m.from) return false;
  if (a.type === "app_resp") {
    if (a.reject || m.reject) return false;
    slot.index = Math.max(slot.index, m.index);
  } else if (a.type === "app") {
    const entries = slot.entries ?? a.entries;
    const last = entries[entries.length - 1];
    const lastIndex = last === undefined ? a.index : last.index;
    const lastTerm = last === undefined ? a.logTerm : last.term;
    if (m.index !== lastIndex || m.logTerm !== lastTerm) return false;
    if (m.entries.length > 0) {
      if (slot.bytes < 0) slot.bytes = entryBytes(entries);
      const add = entryBytes(m.entries);
      if (entries.length > 0 && slot.bytes + add > maxBytes) return false;
      slot.entries ??= [...a.entries];
      for (const e of m.entries) slot.entries.push(e);
      slot.bytes += add;
    }
  } else {
    return false;
  }
  slot.commit = Math.max(slot.commit, m.commit);
  slot.merged = true;
  return true;
}

import { describe, expect, it } from "vitest";
import { RaftLog } from "./raft-log.js";
import { ents } from "./testing/harness.js";
import { TestStorage } from "./testing/test-storage.js";

describe("RaftLog", () => {
  it("merges stable and unstable entries and truncates on conflict only", () => {
    const s = TestStorage.withTerms([1, 1, 2], [1]);
    const log = new RaftLog(s);
    expect([log.firstIndex(), log.lastIndex(), log.lastTerm()]).toEqual([1, 3, 2]);
    expect(log.maybeAppend(3, 2, 0, ents(4, [3, 3]))).toBe(5);
    expect(log.unstable.map((e) => e.index)).toEqual([4, 5]);
    expect(log.maybeAppend(1, 1, 0, ents(2, [1]))).toBe(2); // matching, shorter: nothing cut
    expect(log.lastIndex()).toBe(5);
    expect(log.maybeAppend(2, 1, 0, ents(3, [4]))).toBe(3); // conflict at 3: cut 3..5
    expect(log.lastIndex()).toBe(3);
    expect(log.term(3)).toBe(4);
    expect(log.slice(1, 4).map((e) => e.term)).toEqual([1, 1, 4]);
    expect(log.maybeAppend(3, 9, 0, [])).toBeUndefined();
    expect(log.persistedIndex()).toBe(2);
  });

  it("finds conflict hints by term and refuses to truncate committed entries", () => {
    const log = new RaftLog(TestStorage.withTerms([1, 2, 2, 4, 4, 4], [1]));
    expect(log.findConflictByTerm(6, 3)).toBe(3);
    expect(log.findConflictByTerm(6, 0)).toBe(0);
    log.commitTo(4);
    expect(() => log.append(ents(3, [9]))).toThrow(/invariant_violation/);
    expect(log.maybeCommit(6, 4)).toBe(true);
    expect(log.maybeCommit(6, 5)).toBe(false);
  });

  it("reports compacted and unavailable ranges", () => {
    const s = TestStorage.withTerms([1, 1, 1, 1], [1]);
    s.compact(2, new Uint8Array(0), s.snapshot().metadata.confState);
    const log = new RaftLog(s);
    expect(log.termOrError(1)).toBe("compacted");
    expect(log.termOrError(2)).toBe(1);
    expect(log.termOrError(5)).toBe("unavailable");
    expect(() => log.slice(1, 3)).toThrow(/compacted/);
    expect(() => log.slice(3, 9)).toThrow(/unavailable/);
  });
  it("sees durable kept entries behind an unstable snapshot (bug C)", () => {
    const s = TestStorage.withTerms([1, 1, 1, 1, 1], [1]);
    const log = new RaftLog(s);
    const snap = { metadata: { index: 3, term: 1, confState: s.snapshot().metadata.confState } };
    // A matching snapshot at 3 keeps 4 and 5; 4 became durable before the snapshot did.
    log.restore({ ...snap, data: new Uint8Array(0) }, log.slice(4, 6));
    log.stableTo(4, 1);
    expect([log.offset, log.unstable.length]).toEqual([5, 1]);
    expect([log.firstIndex(), log.lastIndex(), log.termOrError(4)]).toEqual([4, 5, 1]);
    expect(log.findConflict(ents(4, [1]))).toBe(0); // a duplicate of 4 does not "conflict"
    log.stableTo(5, 1);
    expect([log.lastIndex(), log.unstable.length]).toEqual([5, 0]); // was the snapshot index
    expect(log.slice(4, 6).map((e) => e.index)).toEqual([4, 5]);
    expect(log.termOrError(6)).toBe("unavailable");
  });

  it("fails loudly when the stable view and the unstable tail do not meet", () => {
    // Only a broken core gets here (the "truncate on a non-conflict" mutant): it re-appends a
    // matching entry, the store keeps the entries after it, and the view has a gap.
    const log = new RaftLog(TestStorage.withTerms([1, 1, 1, 1, 1], [1]));
    log.append(ents(4, [1]));
    log.stableTo(4, 1);
    expect(() => log.slice(5, 6)).toThrow(/invariant_violation.*gap/);
  });
});

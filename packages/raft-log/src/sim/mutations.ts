import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One textual patch of a core source file. */
export interface MutationPatch {
  /** Path relative to the package's `src/`. */
  readonly file: string;
  /** Exact text to replace; it must occur exactly once. */
  readonly find: string;
  readonly replace: string;
}

/** A reintroduced Raft bug the simulator must catch (spec/raft.md, "Beyond scenarios" 3). */
export interface Mutation {
  readonly name: string;
  readonly description: string;
  readonly patches: readonly MutationPatch[];
}

/**
 * The six bugs of the spec (plus a second "reply before sync" variant for votes), each as a
 * precise patch of the current core. {@link applyPatches} fails loudly when a target text is
 * gone, so a core refactor cannot silently disable the validation.
 */
export const MUTATIONS: readonly Mutation[] = [
  {
    name: "vote-ignores-last-term",
    description: "the up-to-date check of a vote compares only the last index, not the last term",
    patches: [
      {
        file: "core/raft-log.ts",
        find: "return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());",
        replace: "return lastIndex >= this.lastIndex() || (lastTerm !== lastTerm && myTerm === 0);",
      },
    ],
  },
  {
    name: "commit-prior-term-by-counting",
    description: "the leader commits an entry of an earlier term once a majority stores it",
    patches: [
      {
        file: "core/raft-log.ts",
        find: "if (maxIndex > this.committed && this.term(maxIndex) === term) {",
        replace: "if (maxIndex > this.committed && term > 0) {",
      },
    ],
  },
  {
    name: "truncate-on-non-conflict",
    description:
      "a follower drops its log after prevLogIndex on every AppendEntries, even when the entries match",
    patches: [
      {
        file: "core/raft-log.ts",
        find: "const ci = this.findConflict(ents);",
        replace: "const ci = ents.length > 0 ? prevIndex + 1 : 0;",
      },
    ],
  },
  {
    name: "reply-before-sync",
    description:
      "new entries do not require a sync, so followers acknowledge them before they are durable",
    patches: [
      {
        file: "core/raft.ts",
        find: "    const mustSync =\n      entries.length > 0 ||\n      snapshot !== undefined ||",
        replace:
          "    const mustSync =\n      entries.length < 0 ||\n      snapshot !== undefined ||",
      },
    ],
  },
  {
    name: "reply-before-sync-vote",
    description: "term and vote changes do not require a sync, so votes are granted before durable",
    patches: [
      {
        file: "core/raft.ts",
        find: "      hs.term !== this.prevHard.term ||\n      hs.vote !== this.prevHard.vote;",
        replace: "      (hs.term !== this.prevHard.term && hs.term < 0) ||\n      hs.vote < 0;",
      },
    ],
  },
  {
    name: "joint-single-majority",
    description:
      "a joint configuration counts commits and votes with the incoming majority only (C_old ignored)",
    patches: [
      {
        file: "core/quorum.ts",
        find: "  const b = majorityCommitted(cfg.outgoing, acked);",
        replace: "  const b = cfg.outgoing.size >= 0 ? a : majorityCommitted(cfg.outgoing, acked);",
      },
      {
        file: "core/quorum.ts",
        find: "  const b = majorityVote(cfg.outgoing, votes);",
        replace: "  const b = cfg.outgoing.size >= 0 ? a : majorityVote(cfg.outgoing, votes);",
      },
    ],
  },
  {
    name: "read-index-before-own-term-commit",
    description: "a fresh leader serves ReadIndex before it has committed an entry of its term",
    patches: [
      {
        file: "core/raft.ts",
        find: '      case "read_index":\n        if (!this.committedInCurrentTerm()) {',
        replace:
          '      case "read_index":\n        if (!this.committedInCurrentTerm() && this.term < 0) {',
      },
    ],
  },
];

function countOccurrences(text: string, find: string): number {
  let n = 0;
  for (let i = text.indexOf(find); i >= 0; i = text.indexOf(find, i + find.length)) n++;
  return n;
}

/**
 * Applies `m` to the source tree at `srcDir` (in place). Throws when a target text does not
 * occur exactly once.
 */
export function applyPatches(srcDir: string, m: Mutation): void {
  for (const p of m.patches) {
    const path = join(srcDir, p.file);
    const text = readFileSync(path, "utf8");
    const n = countOccurrences(text, p.find);
    if (n !== 1) {
      throw new Error(
        `mutation ${m.name}: patch target found ${n} times in ${p.file} (expected once): ${JSON.stringify(p.find)}`,
      );
    }
    writeFileSync(path, text.replace(p.find, p.replace));
  }
}

/** Checks that every patch of `m` applies to the given source text map (file → text). */
export function patchTargetsPresent(m: Mutation, read: (file: string) => string): string[] {
  const problems: string[] = [];
  for (const p of m.patches) {
    const n = countOccurrences(read(p.file), p.find);
    if (n !== 1) problems.push(`${m.name}: ${p.file} has the target ${n} times`);
  }
  return problems;
}

/** Copies `srcDir` to a fresh temporary directory, applies `m`, returns the copy's `src`. */
export function mutatedCopy(srcDir: string, m: Mutation): { src: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), `raft-mutant-${m.name}-`));
  const src = join(root, "src");
  cpSync(srcDir, src, {
    recursive: true,
    filter: (p) => !p.endsWith(".test.ts") && !p.endsWith(".bench.ts"),
  });
  applyPatches(src, m);
  return { src, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

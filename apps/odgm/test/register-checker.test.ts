// The chaos tests' linearizability check must decide: the register model's reductions
// (unread values forgotten, identical timed-out requests taken in call order) never change
// a verdict, and they decide the kept histories that once exhausted the step budget.
import { join } from "node:path";
import { analyzeOperations } from "@oprc/raft-log/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkRegisterHistory,
  forgetUnreadValues,
  type RegisterInput,
  type RegisterOperation,
  type RegisterOutput,
  readRegisterHistory,
  registerModel,
  UNREAD,
} from "./fixtures/register-workload.js";

const kept = (name: string) => join(import.meta.dirname, "fixtures", "chaos-histories", name);
/** The model as it was before the reductions: every pending request searched in every order. */
const { inputKey: _searchedInEveryOrder, ...plainModel } = registerModel;

describe("the register checker on kept chaos histories", () => {
  it.each([
    ["2026-11-27-unknown-66-pending.json.gz", 1953],
    ["2026-11-27-unknown-53-pending.json.gz", 3141],
  ])("decides %s, which exhausted 50 M steps before", (name, length) => {
    const history = readRegisterHistory(kept(name));
    expect(history).toHaveLength(length);
    expect(analyzeOperations(plainModel, history, { maxSteps: 2_000_000 }).verdict).toBe("unknown");
    const check = checkRegisterHistory(history);
    expect(check.verdict).toBe("ok");
    expect(check.steps).toBeLessThan(2_000_000);
  });

  it("still finds the kept illegal history illegal", () => {
    const history = readRegisterHistory(kept("2026-11-24-reg0-illegal.json.gz"));
    expect(checkRegisterHistory(history).verdict).toBe("illegal");
  });
});

const op = (input: RegisterInput, output?: RegisterOutput, call = 0): RegisterOperation => ({
  clientId: call,
  input,
  call,
  output,
  return: output === undefined ? Number.POSITIVE_INFINITY : call + 1,
});

describe("forgetUnreadValues", () => {
  it("replaces only the values no read returned", () => {
    const history = [
      op({ op: "write", key: "a", value: "seen" }, { op: "write" }),
      op({ op: "write", key: "a", value: "lost" }),
      op({ op: "cas", key: "a", expected: 1n, value: "also-lost" }, { op: "cas", ok: true }),
      op({ op: "read", key: "a" }, { op: "read", version: 1n, value: "seen" }),
    ];
    const values = forgetUnreadValues(history).map((o) =>
      o.input.op === "read" ? "-" : o.input.value,
    );
    expect(values).toEqual(["seen", UNREAD, UNREAD, "-"]);
  });

  it("keeps timed-out CAS requests on different versions apart", () => {
    // CAS(1) is sent first, CAS(0) second, both time out; the write makes version 3 only if
    // CAS(0) and then CAS(1) took effect. Neither value is read: both become UNREAD.
    const history = [
      op({ op: "cas", key: "a", expected: 1n, value: "x" }, undefined, 0),
      op({ op: "cas", key: "a", expected: 0n, value: "y" }, undefined, 1),
      op({ op: "write", key: "a", value: "z" }, { op: "write" }, 10),
      op({ op: "read", key: "a" }, { op: "read", version: 3n, value: "z" }, 20),
    ];
    expect(checkRegisterHistory(history).verdict).toBe("ok");
  });
});

interface Gen {
  client: number;
  gap: number;
  dur: number;
  point: number;
  kind: "read" | "write" | "cas";
  expected: number;
  pending: boolean;
  applied: boolean;
}

const genOp: fc.Arbitrary<Gen> = fc.record({
  client: fc.nat({ max: 4 }),
  gap: fc.nat({ max: 4 }),
  dur: fc.integer({ min: 1, max: 12 }),
  point: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
  kind: fc.constantFrom("read" as const, "write" as const, "cas" as const),
  expected: fc.nat({ max: 4 }),
  pending: fc.nat({ max: 3 }).map((n) => n === 0),
  applied: fc.boolean(),
});

/**
 * A one-register history that is linearizable by construction: each operation takes effect
 * at a point inside its interval (a pending one at its point, or never), reads and CAS
 * answer from the register at that point. Written values are unique, as in the workload.
 */
function registerHistory(gens: Gen[]): RegisterOperation[] {
  const clock = new Map<number, number>();
  const timed = gens.flatMap((g, i) => {
    const call = (clock.get(g.client) ?? 0) + g.gap + 0.5;
    if (!Number.isFinite(call)) return [];
    const ret = call + g.dur;
    clock.set(g.client, g.pending ? Number.POSITIVE_INFINITY : ret);
    return [{ g, i, call, ret, at: call + g.point * g.dur }];
  });
  let version = 0n;
  let value = "";
  const outputs = new Map<number, RegisterOutput>();
  for (const t of [...timed].sort((a, b) => a.at - b.at)) {
    if (t.g.pending && !t.g.applied) continue;
    if (t.g.kind === "read") outputs.set(t.i, { op: "read", version, value });
    else if (t.g.kind === "write") {
      version++;
      value = `v${t.i}`;
      outputs.set(t.i, { op: "write" });
    } else {
      const ok = version === BigInt(t.g.expected);
      if (ok) {
        version++;
        value = `v${t.i}`;
      }
      outputs.set(t.i, { op: "cas", ok });
    }
  }
  return timed
    .filter((t) => !(t.g.pending && t.g.kind === "read"))
    .map((t): RegisterOperation => {
      const input: RegisterInput =
        t.g.kind === "read"
          ? { op: "read", key: "r" }
          : t.g.kind === "write"
            ? { op: "write", key: "r", value: `v${t.i}` }
            : { op: "cas", key: "r", expected: BigInt(t.g.expected), value: `v${t.i}` };
      return t.g.pending
        ? { clientId: t.g.client, input, call: t.call, output: undefined, return: Infinity }
        : { clientId: t.g.client, input, call: t.call, output: outputs.get(t.i), return: t.ret };
    });
}

/** A plausible wrong answer: a read off by a version or showing another write, a CAS flipped. */
function corrupt(history: RegisterOperation[], pick: number): RegisterOperation[] {
  const answered = history.filter((o) => o.output !== undefined && o.output.op !== "write");
  if (answered.length === 0) return history;
  const victim = answered[pick % answered.length] as RegisterOperation;
  const out = victim.output as RegisterOutput;
  const written = history.flatMap((o) => (o.input.op === "read" ? [] : [o.input.value]));
  let wrong: RegisterOutput;
  if (out.op === "cas") wrong = { op: "cas", ok: !out.ok };
  else if (out.op === "read" && pick % 2 === 0)
    wrong = { ...out, version: out.version + (pick % 4 === 0 ? 1n : -1n) };
  else if (out.op === "read")
    wrong = { ...out, value: written[pick % Math.max(1, written.length)] ?? "x" };
  else return history;
  return history.map((o) => (o === victim ? { ...o, output: wrong } : o));
}

describe("the register model's reductions", () => {
  it("accept every history that is linearizable by construction", () => {
    fc.assert(
      fc.property(fc.array(genOp, { maxLength: 40 }), (gens) => {
        expect(checkRegisterHistory(registerHistory(gens)).verdict).toBe("ok");
      }),
      { numRuns: 400 },
    );
  });

  it("never change a verdict the plain search reaches", () => {
    fc.assert(
      fc.property(fc.array(genOp, { maxLength: 24 }), fc.nat(), (gens, pick) => {
        const history = corrupt(registerHistory(gens), pick);
        const plain = analyzeOperations(plainModel, history, { maxSteps: 2_000_000 }).verdict;
        fc.pre(plain !== "unknown");
        expect(checkRegisterHistory(history).verdict).toBe(plain);
      }),
      { numRuns: 800 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkOperations } from "./check-operations.js";
import type { KvInput, KvOperation } from "./kv-model.js";
import { kvModel } from "./kv-model.js";

interface Gen {
  client: number;
  gap: number;
  dur: number;
  point: number; // where in [call, return] the operation takes effect, 0..1
  op: "get" | "put" | "append";
  key: string;
  value: string;
  pending: boolean;
}

const genOp: fc.Arbitrary<Gen> = fc.record({
  client: fc.nat({ max: 4 }),
  gap: fc.nat({ max: 5 }),
  dur: fc.integer({ min: 1, max: 20 }),
  point: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
  op: fc.constantFrom("get" as const, "put" as const, "append" as const),
  key: fc.constantFrom("a", "b"),
  value: fc.constantFrom("x", "y", "z"),
  pending: fc.nat({ max: 9 }).map((n) => n === 0), // one operation in ten never returns
});

/**
 * Builds a history that is linearizable by construction: every operation takes effect at
 * a point inside its interval, and reads return the register at that point.
 */
function linearizableHistory(gens: Gen[]): KvOperation[] {
  const clock = new Map<number, number>();
  const timed = gens.map((g) => {
    const call = (clock.get(g.client) ?? 0) + g.gap + 0.5;
    const ret = call + g.dur;
    clock.set(g.client, g.pending ? Number.POSITIVE_INFINITY : ret);
    return { g, call, ret, at: call + g.point * g.dur };
  });
  // A client with a pending operation issues nothing after it.
  const live = timed.filter((t) => Number.isFinite(t.call));
  const state = new Map<string, string>();
  const outputs = new Map<(typeof live)[number], string>();
  for (const t of [...live].sort((a, b) => a.at - b.at)) {
    const cur = state.get(t.g.key) ?? "";
    if (t.g.op === "get") outputs.set(t, cur);
    else state.set(t.g.key, t.g.op === "put" ? t.g.value : cur + t.g.value);
  }
  return live.map((t): KvOperation => {
    const input: KvInput =
      t.g.op === "get"
        ? { op: "get", key: t.g.key }
        : { op: t.g.op, key: t.g.key, value: t.g.value };
    if (t.g.pending) {
      return { clientId: t.g.client, input, call: t.call, output: undefined, return: Infinity };
    }
    return {
      clientId: t.g.client,
      input,
      call: t.call,
      output: { value: outputs.get(t) ?? "" },
      return: t.ret,
    };
  });
}

describe("checkOperations on generated histories", () => {
  it("accepts every history that is linearizable by construction", () => {
    fc.assert(
      fc.property(fc.array(genOp, { maxLength: 40 }), (gens) => {
        expect(checkOperations(kvModel, linearizableHistory(gens))).toBe("ok");
      }),
      { numRuns: 500 },
    );
  });

  it("rejects it once a completed read returns a value no write produced", () => {
    fc.assert(
      fc.property(fc.array(genOp, { minLength: 1, maxLength: 40 }), fc.nat(), (gens, pick) => {
        const h = linearizableHistory(gens);
        const reads = h.filter((o) => o.input.op === "get" && o.output !== undefined);
        fc.pre(reads.length > 0);
        const victim = reads[pick % reads.length] as KvOperation;
        const bad = h.map((o) => (o === victim ? { ...o, output: { value: "!" } } : o));
        expect(checkOperations(kvModel, bad)).toBe("illegal");
      }),
      { numRuns: 300 },
    );
  });
});

describe("kvModel's pruning of pending operations", () => {
  /**
   * The same model without pruning: per-key partitions, every operation kept, and no
   * input keys (identical pending requests searched in every order; the generated values
   * repeat, so histories with identical pending requests are common).
   */
  const { inputKey: _searchedInEveryOrder, ...keyless } = kvModel;
  const unpruned = {
    ...keyless,
    partition(history: readonly KvOperation[]): KvOperation[][] {
      const byKey = new Map<string, KvOperation[]>();
      for (const op of history) byKey.set(op.input.key, [...(byKey.get(op.input.key) ?? []), op]);
      return [...byKey.values()];
    },
  };

  it("never changes a verdict the unpruned search reaches", () => {
    fc.assert(
      fc.property(
        fc.array(genOp, { maxLength: 24 }),
        fc.nat(),
        fc.boolean(),
        (gens, pick, corrupt) => {
          let h = linearizableHistory(gens);
          const reads = h.filter((o) => o.input.op === "get" && o.output !== undefined);
          if (corrupt && reads.length > 0) {
            const victim = reads[pick % reads.length] as KvOperation;
            // A plausible wrong answer: another value written to the key, or the empty register.
            const other = h.find((o) => o.input.key === victim.input.key && o.input.op !== "get");
            const value =
              other !== undefined && other.input.op !== "get" && pick % 2 === 0
                ? other.input.value
                : "";
            h = h.map((o) => (o === victim ? { ...o, output: { value } } : o));
          }
          const plain = checkOperations(unpruned, h, { maxSteps: 2_000_000 });
          fc.pre(plain !== "unknown");
          expect(checkOperations(kvModel, h)).toBe(plain);
        },
      ),
      { numRuns: 800 },
    );
  });

  it("decides a history of many timed-out writes that nobody read", () => {
    // 24 writes that timed out, then a read that still sees the empty register: the
    // unpruned search tries the subsets of writes that could have happened first.
    const ops: KvOperation[] = [];
    for (let i = 0; i < 24; i++) {
      ops.push({
        clientId: 100 + i,
        input: { op: "put", key: "k", value: `lost${i};` },
        call: i,
        output: undefined,
        return: Number.POSITIVE_INFINITY,
      });
    }
    ops.push({
      clientId: 1,
      input: { op: "get", key: "k" },
      call: 50,
      output: { value: "" },
      return: 51,
    });
    expect(checkOperations(unpruned, ops, { maxSteps: 100_000 })).toBe("unknown");
    expect(checkOperations(kvModel, ops, { maxSteps: 100_000 })).toBe("ok");
  });

  it("takes identical timed-out requests in call order (Model.inputKey)", () => {
    // 24 appends of "a" that timed out, then a read: which of them took effect cannot
    // matter, but without input keys the search tries the subsets one by one.
    const ops: KvOperation[] = [];
    for (let i = 0; i < 24; i++) {
      ops.push({
        clientId: 100 + i,
        input: { op: "append", key: "k", value: "a" },
        call: i,
        output: undefined,
        return: Number.POSITIVE_INFINITY,
      });
    }
    const read = (value: string): KvOperation => ({
      clientId: 1,
      input: { op: "get", key: "k" },
      call: 50,
      output: { value },
      return: 51,
    });
    expect(checkOperations(kvModel, [...ops, read("a".repeat(12))], { maxSteps: 100_000 })).toBe(
      "ok",
    );
    // More than were sent is impossible: proving it without input keys means trying every
    // subset; with them, 25 orders.
    const tooMany = [...ops, read("a".repeat(25))];
    expect(checkOperations(unpruned, tooMany, { maxSteps: 100_000 })).toBe("unknown");
    expect(checkOperations(kvModel, tooMany, { maxSteps: 100_000 })).toBe("illegal");
    // A request called after the read cannot count towards it.
    const late = ops.map((o, i) => (i >= 20 ? { ...o, call: 60 + i } : o));
    expect(checkOperations(kvModel, [...late, read("a".repeat(21))], { maxSteps: 100_000 })).toBe(
      "illegal",
    );
    expect(checkOperations(kvModel, [...late, read("a".repeat(20))], { maxSteps: 100_000 })).toBe(
      "ok",
    );
  });
});

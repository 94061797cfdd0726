import type { Model, Operation } from "./model.js";

/**
 * Outcome of a linearizability check:
 * - `"ok"`: a linearization exists;
 * - `"illegal"`: none exists (the history is not linearizable);
 * - `"unknown"`: the step budget ran out before either was proven.
 */
export type CheckVerdict = "ok" | "illegal" | "unknown";

/** Options of {@link checkOperations} and {@link analyzeOperations}. */
export interface CheckOptions {
  /**
   * Budget of model steps (calls to `model.step`) over the whole history, all partitions
   * together. When it runs out the verdict is `"unknown"` instead of running away on a
   * pathological history. Default 10,000,000 (about a second or two of search).
   */
  readonly maxSteps?: number;
}

/** Result of checking one partition. */
export interface PartitionResult {
  readonly verdict: CheckVerdict;
  /** Model steps spent on this partition. */
  readonly steps: number;
  /**
   * Indices into the checked history. For `"ok"`: a linearization of every completed
   * operation (plus any pending ones that took effect), in order. For `"illegal"` and
   * `"unknown"`: the longest legal prefix the search found — the operation after it is
   * where the history stops making sense, which is where to look first.
   */
  readonly linearization: readonly number[];
}

/** Detailed result of {@link analyzeOperations}. */
export interface CheckResult {
  readonly verdict: CheckVerdict;
  /** Model steps spent in total. */
  readonly steps: number;
  /** One result per partition, in the order the model's `partition` returned them. */
  readonly partitions: readonly PartitionResult[];
}

/** Default step budget of {@link CheckOptions.maxSteps}. */
export const DEFAULT_MAX_STEPS = 10_000_000;

interface Node {
  readonly id: number;
  readonly isCall: boolean;
  readonly time: number;
  prev: Node | null;
  next: Node | null;
  match: Node | null;
}

interface CacheItem<S> {
  readonly bits: Uint32Array;
  readonly state: S;
}

/**
 * Checks whether a history is linearizable with respect to `model`.
 *
 * The search is the Wing–Gong algorithm with Lowe's memoization: operations are kept in a
 * doubly linked list of call and return events ordered by time; the search repeatedly
 * tries to linearize a call that precedes every remaining return, and backtracks when it
 * meets a return it cannot get past. Each (set of linearized operations, model state)
 * pair is explored at most once. Pending operations (no return) may be linearized any time
 * after their call or left out (they never took effect).
 *
 * When the model gives {@link Model.inputKey}, pending operations with equal keys are
 * linearized in call order only. That is sound and complete: in any linearization that
 * uses k of them, the k called first can stand in at the same points, each called by the
 * time its point comes. It turns the 2^n subsets of n identical timed-out requests into n+1
 * choices.
 *
 * @example
 * ```ts
 * const verdict = checkOperations(kvModel, parseEdnHistory(text), { maxSteps: 1e6 });
 * if (verdict === "illegal") throw new Error("not linearizable");
 * ```
 */
export function checkOperations<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: CheckOptions = {},
): CheckVerdict {
  return analyzeOperations(model, history, options).verdict;
}

/**
 * Like {@link checkOperations}, but also returns per-partition step counts and a witness:
 * the linearization found, or the longest legal prefix when there is none.
 */
export function analyzeOperations<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: CheckOptions = {},
): CheckResult {
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const indexOf = new Map<Operation<I, O>, number>();
  history.forEach((op, i) => {
    if (!indexOf.has(op)) indexOf.set(op, i);
  });
  const parts = model.partition ? model.partition(history) : [history.slice()];
  // Partitions are searched round-robin in slices, so a partition that is quickly proven
  // illegal ends the check even when another partition would need a long search (a bad
  // history usually has one easy witness; proving an ok one needs every part anyway).
  const searches = parts.map((part) => createPartitionSearch(model, part));
  let steps = 0;
  let slice = SLICE;
  let illegal = false;
  let active = searches.filter((s) => s.status === "running");
  while (active.length > 0 && !illegal && steps < maxSteps) {
    for (const search of active) {
      const grant = Math.min(slice, maxSteps - steps);
      if (grant <= 0) break;
      const before = search.steps;
      search.run(grant);
      steps += search.steps - before;
      if (search.status === "illegal") {
        illegal = true;
        break;
      }
    }
    active = active.filter((s) => s.status === "running");
    slice *= 2;
  }
  const partitions: PartitionResult[] = searches.map((search, p) => {
    const part = parts[p] as Operation<I, O>[];
    return {
      verdict: search.status === "running" ? "unknown" : search.status,
      steps: search.steps,
      linearization: search.linearization().map((i) => {
        const op = part[i];
        return op === undefined ? -1 : (indexOf.get(op) ?? -1);
      }),
    };
  });
  const verdict: CheckVerdict = illegal
    ? "illegal"
    : searches.every((s) => s.status === "ok")
      ? "ok"
      : "unknown";
  return { verdict, steps, partitions };
}

/** Steps granted to each partition in the first round; doubled every round. */
const SLICE = 1024;

interface PartitionSearch {
  readonly status: "running" | "ok" | "illegal";
  readonly steps: number;
  /** Advances the search by at most `maxSteps` model steps. */
  run(maxSteps: number): void;
  /** The full linearization when ok, else the longest legal prefix seen. */
  linearization(): number[];
}

function createPartitionSearch<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
): PartitionSearch {
  const n = ops.length;
  // Build the event list: calls before returns at equal times (overlapping operations are
  // concurrent, the permissive reading), then by operation index for determinism.
  const events: Node[] = [];
  let remaining = 0;
  for (let id = 0; id < n; id++) {
    const op = ops[id] as Operation<I, O>;
    const call: Node = { id, isCall: true, time: op.call, prev: null, next: null, match: null };
    const ret: Node = {
      id,
      isCall: false,
      time: op.output === undefined ? Number.POSITIVE_INFINITY : op.return,
      prev: null,
      next: null,
      match: null,
    };
    call.match = ret;
    events.push(call, ret);
    if (op.output !== undefined) remaining++;
  }
  events.sort((a, b) => {
    if (a.time !== b.time) return a.time < b.time ? -1 : 1;
    if (a.isCall !== b.isCall) return a.isCall ? -1 : 1;
    return a.id - b.id;
  });
  const head: Node = { id: -1, isCall: false, time: -1, prev: null, next: null, match: null };
  let tail = head;
  for (const e of events) {
    tail.next = e;
    e.prev = tail;
    tail = e;
  }

  const equal = model.equal ?? Object.is;
  const hashState = model.hash;
  const before = pendingPredecessors(model, ops);
  const words = Math.max(1, Math.ceil(n / 32));
  const bits = new Uint32Array(words);
  const cache = new Map<number, CacheItem<S>[]>();
  const stack: { node: Node; state: S }[] = [];
  let state = model.init();
  let steps = 0;
  let longest: number[] = [];

  const hashOf = (b: Uint32Array, s: S): number => {
    let h = 0x811c9dc5;
    for (let i = 0; i < b.length; i++) {
      h = Math.imul(h ^ (b[i] as number), 0x01000193);
    }
    if (hashState) h = Math.imul(h ^ (hashState(s) | 0), 0x01000193);
    return h >>> 0;
  };
  const sameBits = (a: Uint32Array, b: Uint32Array): boolean => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  };
  /** Adds (bits, s) to the cache; false when it was already there. */
  const remember = (s: S): boolean => {
    const h = hashOf(bits, s);
    const bucket = cache.get(h);
    if (bucket) {
      for (const item of bucket) {
        if (sameBits(item.bits, bits) && equal(item.state, s)) return false;
      }
      bucket.push({ bits: bits.slice(), state: s });
    } else {
      cache.set(h, [{ bits: bits.slice(), state: s }]);
    }
    return true;
  };
  const lift = (e: Node): void => {
    (e.prev as Node).next = e.next;
    (e.next as Node).prev = e.prev;
    const m = e.match as Node;
    (m.prev as Node).next = m.next;
    if (m.next) m.next.prev = m.prev;
  };
  const unlift = (e: Node): void => {
    const m = e.match as Node;
    (m.prev as Node).next = m;
    if (m.next) m.next.prev = m;
    (e.prev as Node).next = e;
    (e.next as Node).prev = e;
  };

  let entry = head.next;
  let status: "running" | "ok" | "illegal" = remaining === 0 ? "ok" : "running";

  const run = (budget: number): void => {
    const limit = steps + budget;
    while (status === "running") {
      if (remaining === 0) {
        status = "ok";
        return;
      }
      if (entry === null) throw new Error("unreachable: a completed return is always listed");
      if (entry.isCall) {
        if (steps >= limit) return;
        const op = ops[entry.id] as Operation<I, O>;
        const prior = before[entry.id] as number;
        if (prior >= 0 && ((bits[prior >>> 5] as number) & (1 << (prior & 31))) === 0) {
          // An identical pending request issued earlier is still unlinearized: take it first.
          entry = entry.next;
          continue;
        }
        steps++;
        const [legal, next] = model.step(state, op.input, op.output);
        if (legal) {
          const word = entry.id >>> 5;
          const bit = 1 << (entry.id & 31);
          bits[word] = (bits[word] as number) | bit;
          if (remember(next)) {
            stack.push({ node: entry, state });
            state = next;
            if (op.output !== undefined) remaining--;
            lift(entry);
            if (stack.length > longest.length) longest = stack.map((f) => f.node.id);
            entry = head.next;
            continue;
          }
          bits[word] = (bits[word] as number) & ~bit;
        }
        entry = entry.next;
      } else {
        // A return we cannot pass: undo the most recent linearization, try the next call.
        const frame = stack.pop();
        if (frame === undefined) {
          status = "illegal";
          return;
        }
        const e = frame.node;
        state = frame.state;
        const word = e.id >>> 5;
        bits[word] = (bits[word] as number) & ~(1 << (e.id & 31));
        if ((ops[e.id] as Operation<I, O>).output !== undefined) remaining++;
        unlift(e);
        entry = e.next;
      }
    }
  };
  return {
    get status() {
      return status;
    },
    get steps() {
      return steps;
    },
    run,
    linearization: () => (status === "ok" ? stack.map((f) => f.node.id) : longest.slice()),
  };
}

/**
 * For each operation, the index of the pending operation with the same
 * {@link Model.inputKey} called just before it when it is pending itself, else -1.
 */
function pendingPredecessors<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
): Int32Array {
  const before = new Int32Array(ops.length).fill(-1);
  const inputKey = model.inputKey;
  if (inputKey === undefined) return before;
  const pending: number[] = [];
  ops.forEach((op, id) => {
    if (op.output === undefined) pending.push(id);
  });
  pending.sort(
    (a, b) => (ops[a] as Operation<I, O>).call - (ops[b] as Operation<I, O>).call || a - b,
  );
  const last = new Map<string, number>();
  for (const id of pending) {
    const key = inputKey.call(model, (ops[id] as Operation<I, O>).input);
    const prior = last.get(key);
    if (prior !== undefined) before[id] = prior;
    last.set(key, id);
  }
  return before;
}

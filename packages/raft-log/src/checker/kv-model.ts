import type { Model, Operation } from "./model.js";

/** Input of the key-value model: a read, an overwrite, or an append to one key. */
export type KvInput =
  | { readonly op: "get"; readonly key: string }
  | { readonly op: "put"; readonly key: string; readonly value: string }
  | { readonly op: "append"; readonly key: string; readonly value: string };

/** Output of the key-value model: the value a `get` read (ignored for `put`/`append`). */
export interface KvOutput {
  readonly value: string;
}

/** One operation of a key-value history. */
export type KvOperation = Operation<KvInput, KvOutput>;

/**
 * The sequential specification of a key-value store of string registers: every key
 * starts as `""`; `put` sets it, `append` concatenates, `get` returns it. The state is one
 * register because {@link Model.partition} splits the history per key (valid for this
 * model: operations on different keys commute).
 *
 * @example
 * ```ts
 * checkOperations(kvModel, history, { maxSteps: 1_000_000 }); // "ok" | "illegal" | "unknown"
 * ```
 */
export const kvModel: Model<string, KvInput, KvOutput> = {
  init: () => "",
  step(state, input, output) {
    switch (input.op) {
      case "get":
        return [output === undefined || output.value === state, state];
      case "put":
        return [true, input.value];
      case "append":
        return [true, state + input.value];
    }
  },
  partition(history) {
    const byKey = new Map<string, KvOperation[]>();
    for (const op of history) {
      const list = byKey.get(op.input.key);
      if (list) list.push(op);
      else byKey.set(op.input.key, [op]);
    }
    return [...byKey.values()].map(pruneUnobserved);
  },
  equal: (a, b) => a === b,
  inputKey: (input) =>
    input.op === "get" ? `get ${input.key}` : `${input.op} ${input.key} ${input.value}`,
  hash(state) {
    let h = 0x811c9dc5;
    for (let i = 0; i < state.length; i++) h = Math.imul(h ^ state.charCodeAt(i), 0x01000193);
    return h;
  },
  describe(input, output) {
    if (input.op === "get") {
      return `get(${JSON.stringify(input.key)}) -> ${output === undefined ? "?" : JSON.stringify(output.value)}`;
    }
    return `${input.op}(${JSON.stringify(input.key)}, ${JSON.stringify(input.value)})`;
  },
};

/**
 * Drops pending reads (a read whose answer never came changes nothing and constrains
 * nothing) and pending writes (outcome unknown) whose value no completed read of the key
 * ever returned. Such a write may be taken never to have happened: had it taken effect, every
 * read while its value stood would have shown it, and none did — so a linearization with
 * it implies one without it. Without this, each pending write doubles the search (it may
 * take effect at any point, or not at all), which is what exhausts the step budget on
 * histories with many timeouts. Always sound (a value that two writes share, or that a read
 * merely contains, counts as observed: the write is kept); most effective with unique
 * written values, which the simulator's clients use.
 */
function pruneUnobserved(ops: KvOperation[]): KvOperation[] {
  const reads: string[] = [];
  for (const op of ops) {
    if (op.input.op === "get" && op.output !== undefined) reads.push(op.output.value);
  }
  return ops.filter((op) => {
    if (op.output !== undefined) return true;
    if (op.input.op === "get") return false;
    const value = op.input.value;
    if (value === "") return true;
    return reads.some((r) =>
      op.input.op === "put" ? r === value || r.startsWith(value) : r.includes(value),
    );
  });
}

import type { Operation } from "./model.js";

/** One recorded client event. */
export type HistoryEvent<I, O> =
  | {
      readonly kind: "invoke";
      readonly opId: number;
      readonly clientId: number;
      readonly time: number;
      readonly input: I;
    }
  | {
      readonly kind: "ok";
      readonly opId: number;
      readonly clientId: number;
      readonly time: number;
      readonly output: O;
    }
  | {
      /** The operation definitely did not take effect (e.g. rejected before proposing). */
      readonly kind: "fail";
      readonly opId: number;
      readonly clientId: number;
      readonly time: number;
    }
  | {
      /** The outcome is unknown (timeout, crash): the operation stays pending. */
      readonly kind: "info";
      readonly opId: number;
      readonly clientId: number;
      readonly time: number;
    };

/** Options of {@link createHistoryRecorder}. */
export interface HistoryRecorderOptions {
  /**
   * Clock for event timestamps; must never go backwards. Default: a logical clock that
   * ticks once per event, which is exact for a single-threaded simulator (the order of
   * `invoke`/`ok` calls *is* real time there).
   */
  readonly now?: () => number;
}

/** Records a concurrent client history for the linearizability checker. */
export interface HistoryRecorder<I, O> {
  /** Records that `clientId` issued `input`; returns the operation id for the completion. */
  invoke(clientId: number, input: I): number;
  /** Records the response of an open operation. */
  ok(opId: number, output: O): void;
  /** Records that an open operation definitely did not take effect. */
  fail(opId: number): void;
  /** Records that an open operation's outcome is unknown; it stays pending forever. */
  info(opId: number): void;
  /** Every event so far, in recording order. */
  events(): readonly HistoryEvent<I, O>[];
  /**
   * The history as operations for `checkOperations`: completed ones with their output,
   * pending ones (open or `info`) with `output: undefined` and `return: Infinity`; failed
   * ones are left out.
   */
  operations(): Operation<I, O>[];
}

/**
 * Creates a client history recorder (what the simulator and real-process tests use).
 * @throws RangeError when an operation id is unknown or already closed, or when a client
 * invokes while its previous operation is still open (a client is sequential).
 *
 * @example
 * ```ts
 * const rec = createHistoryRecorder<KvInput, KvOutput>();
 * const id = rec.invoke(1, { op: "put", key: "k", value: "v" });
 * rec.ok(id, { value: "" });
 * checkOperations(kvModel, rec.operations());
 * ```
 */
export function createHistoryRecorder<I, O>(
  options: HistoryRecorderOptions = {},
): HistoryRecorder<I, O> {
  let tick = 0;
  const now = options.now ?? (() => tick++);
  const log: HistoryEvent<I, O>[] = [];
  interface Slot {
    clientId: number;
    input: I;
    call: number;
    state: "open" | "ok" | "fail" | "info";
    output?: O;
    return?: number;
  }
  const slots: Slot[] = [];
  const openByClient = new Map<number, number>();
  const close = (opId: number, state: "ok" | "fail" | "info"): Slot => {
    const slot = slots[opId];
    if (slot === undefined || slot.state !== "open") {
      throw new RangeError(`operation ${opId} is not open`);
    }
    slot.state = state;
    openByClient.delete(slot.clientId);
    return slot;
  };
  return {
    invoke(clientId, input) {
      if (openByClient.has(clientId)) {
        throw new RangeError(`client ${clientId} already has an open operation`);
      }
      const opId = slots.length;
      const time = now();
      slots.push({ clientId, input, call: time, state: "open" });
      openByClient.set(clientId, opId);
      log.push({ kind: "invoke", opId, clientId, time, input });
      return opId;
    },
    ok(opId, output) {
      const slot = close(opId, "ok");
      const time = now();
      slot.output = output;
      slot.return = time;
      log.push({ kind: "ok", opId, clientId: slot.clientId, time, output });
    },
    fail(opId) {
      const slot = close(opId, "fail");
      log.push({ kind: "fail", opId, clientId: slot.clientId, time: now() });
    },
    info(opId) {
      const slot = close(opId, "info");
      log.push({ kind: "info", opId, clientId: slot.clientId, time: now() });
    },
    events: () => log.slice(),
    operations() {
      const out: Operation<I, O>[] = [];
      for (const s of slots) {
        if (s.state === "fail") continue;
        if (s.state === "ok") {
          out.push({
            clientId: s.clientId,
            input: s.input,
            call: s.call,
            output: s.output as O,
            return: s.return as number,
          });
        } else {
          out.push({
            clientId: s.clientId,
            input: s.input,
            call: s.call,
            output: undefined,
            return: Number.POSITIVE_INFINITY,
          });
        }
      }
      return out;
    },
  };
}

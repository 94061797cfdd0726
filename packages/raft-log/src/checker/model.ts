/**
 * One client operation in a history: what was asked, what came back, and when.
 *
 * Times are any totally ordered numbers (logical clock ticks, nanoseconds, line numbers).
 * An operation whose outcome is unknown (the client timed out, crashed, or the history
 * ended first) is *pending*: `output` is `undefined` and `return` is `Infinity`, so it may
 * take effect at any time after its call, or never.
 */
export interface Operation<I, O> {
  /** The client (process) that issued the operation; a client has one operation at a time. */
  readonly clientId: number;
  /** The request. */
  readonly input: I;
  /** Time the request was issued. */
  readonly call: number;
  /** The response, or `undefined` for a pending operation. */
  readonly output: O | undefined;
  /** Time the response arrived, or `Infinity` for a pending operation. */
  readonly return: number;
}

/**
 * A sequential specification the checker tests a history against.
 *
 * @typeParam S - model state; treat it as immutable (`step` returns a new one).
 * @typeParam I - operation input.
 * @typeParam O - operation output.
 */
export interface Model<S, I, O> {
  /** The state before any operation. */
  init(): S;
  /**
   * Applies `input` to `state` and says whether `output` is a legal response.
   * `output` is `undefined` for a pending operation: the model must then accept any
   * response and return the state the operation would leave if it took effect.
   * @returns `[legal, nextState]`; `nextState` is ignored when `legal` is false.
   */
  step(state: S, input: I, output: O | undefined): readonly [boolean, S];
  /**
   * Splits a history into independent sub-histories (for example one per key) that are
   * checked separately. A history is linearizable iff every part is. Default: one part.
   */
  partition?(history: readonly Operation<I, O>[]): Operation<I, O>[][];
  /** State equality for the memoization cache. Default: `Object.is`. */
  equal?(a: S, b: S): boolean;
  /**
   * A hash of the state consistent with {@link Model.equal} (equal states, equal hashes).
   * Default: a constant, which is correct but slower for models with many states.
   */
  hash?(state: S): number;
  /**
   * A string that is equal for two inputs only when they are the same request: the same
   * effect on every state. Optional; when given, the checker takes *pending* operations
   * with equal keys in call order only (which one of two identical, unanswered requests took
   * effect cannot matter, and the earlier one was available whenever the later one was),
   * which removes most of the search that many timeouts cause. Returning a key for inputs
   * that differ makes the checker unsound.
   */
  inputKey?(input: I): string;
  /** Renders an input/output pair for diagnostics. Default: `JSON.stringify`. */
  describe?(input: I, output: O | undefined): string;
}

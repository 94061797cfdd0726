import { BoundedRing } from "./bounded-ring.js";
import type { DispatcherEvent } from "./dispatcher-event.js";

/** One delivery to a subscriber. */
export interface SubscriptionItem {
  /** The event. */
  readonly event: DispatcherEvent;
  /**
   * Events this subscriber lost right before `event` because its buffer was full
   * (oldest first were lost). 0 normally.
   */
  readonly lost: number;
}

/**
 * A subscriber's view of one dispatcher: a bounded buffer (`ODGM_EVENT_BCAST_BOUND`)
 * that loses its oldest events when the reader is slow, and says how many it lost.
 * Iterate with `for await`, or call `next()` / `tryNext()`.
 *
 * @example
 * ```ts
 * const sub = dispatcher.subscribe();
 * for await (const { event, lost } of sub) {
 *   if (lost > 0) console.warn(`missed ${lost} events`);
 *   if (event.kind === "mutation") console.log(event.seq, event.ctx.changed);
 * }
 * ```
 */
export interface EventSubscription extends AsyncIterable<SubscriptionItem> {
  /** The next item; waits when the buffer is empty; `undefined` once closed and drained. */
  next(): Promise<SubscriptionItem | undefined>;
  /** The next item if one is buffered, else `undefined` (never waits). */
  tryNext(): SubscriptionItem | undefined;
  /** Items buffered now. */
  readonly buffered: number;
  /** Events this subscriber lost in total. */
  readonly lost: number;
  /** True once closed (by `close()` or by the dispatcher's shutdown). */
  readonly closed: boolean;
  /** Stops delivery; buffered items stay readable. */
  close(): void;
}

/** Internal implementation; the dispatcher calls `deliver` and `end`. */
export class Subscription implements EventSubscription {
  #ring: BoundedRing<DispatcherEvent>;
  #pendingLost = 0;
  #lostTotal = 0;
  #closed = false;
  #waiters: ((item: SubscriptionItem | undefined) => void)[] = [];
  readonly #onClose: (sub: Subscription) => void;

  constructor(bufferSize: number, onClose: (sub: Subscription) => void) {
    this.#ring = new BoundedRing(bufferSize);
    this.#onClose = onClose;
  }

  get buffered(): number {
    return this.#ring.length;
  }

  get lost(): number {
    return this.#lostTotal;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Delivers one event; returns 1 when an older event was evicted, else 0. */
  deliver(event: DispatcherEvent): number {
    if (this.#closed) return 0;
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      waiter({ event, lost: this.#takeLost() });
      return 0;
    }
    if (this.#ring.pushEvict(event)) {
      this.#pendingLost++;
      this.#lostTotal++;
      return 1;
    }
    return 0;
  }

  #takeLost(): number {
    const n = this.#pendingLost;
    this.#pendingLost = 0;
    return n;
  }

  tryNext(): SubscriptionItem | undefined {
    const event = this.#ring.shift();
    if (event === undefined) return undefined;
    return { event, lost: this.#takeLost() };
  }

  next(): Promise<SubscriptionItem | undefined> {
    const item = this.tryNext();
    if (item !== undefined || this.#closed) return Promise.resolve(item);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Ends delivery (dispatcher shutdown or `close()`); pending `next()` calls resolve `undefined`. */
  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w(undefined);
  }

  close(): void {
    if (this.#closed) return;
    this.end();
    this.#onClose(this);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SubscriptionItem> {
    for (;;) {
      const item = await this.next();
      if (item === undefined) return;
      yield item;
    }
  }
}

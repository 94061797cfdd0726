/**
 * A fixed-capacity FIFO ring buffer (internal). `push` refuses when full (the dispatcher
 * queue drops the new item); `pushEvict` evicts the oldest (subscribers lose old events).
 */
export class BoundedRing<T> {
  readonly capacity: number;
  #items: (T | undefined)[];
  #head = 0;
  #length = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#items = new Array<T | undefined>(capacity);
  }

  /** Items currently held. */
  get length(): number {
    return this.#length;
  }

  /** Appends `item`; false (nothing changed) when full. */
  push(item: T): boolean {
    if (this.#length === this.capacity) return false;
    let i = this.#head + this.#length;
    if (i >= this.capacity) i -= this.capacity;
    this.#items[i] = item;
    this.#length++;
    return true;
  }

  /** Appends `item`, evicting the oldest when full; returns true when one was evicted. */
  pushEvict(item: T): boolean {
    if (this.#length < this.capacity) {
      this.push(item);
      return false;
    }
    this.#items[this.#head] = item;
    this.#head = this.#head + 1 === this.capacity ? 0 : this.#head + 1;
    return true;
  }

  /** Removes and returns the oldest item, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = this.#head + 1 === this.capacity ? 0 : this.#head + 1;
    this.#length--;
    return item;
  }

  /** Removes everything; returns how many items were removed. */
  clear(): number {
    const n = this.#length;
    this.#items.fill(undefined);
    this.#head = 0;
    this.#length = 0;
    return n;
  }
}

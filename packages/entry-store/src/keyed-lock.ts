/**
 * A per-key async mutex: `run(key, fn)` calls for the same key run one at a time in
 * call order; calls for different keys run concurrently. Idle keys hold no memory.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Number of keys with a running or queued task. */
  get size(): number {
    return this.tails.size;
  }

  /** True while a task for `key` runs or waits. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Runs `fn` once every earlier task for `key` has settled. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = prev === undefined ? mine : prev.then(() => mine);
    this.tails.set(key, tail);
    try {
      if (prev !== undefined) await prev;
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Resolves when every task queued so far has settled. */
  async drain(): Promise<void> {
    while (this.tails.size > 0) {
      await Promise.all([...this.tails.values()]);
    }
  }
}

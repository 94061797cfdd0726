// The request side of one Raft stream call: batches are offered one at a time and taken by
// the call as it reads. Unlike a writable iterable whose writes wait for the reader
// forever, closing the channel rejects the batch on offer, so a stream that failed (a peer
// that is down, a cut link) leaves nothing pending behind it.

/** An async iterable fed one item at a time; see the file comment. */
export class BatchChannel<T> implements AsyncIterable<T> {
  /** Readers waiting for an item (a consumer may ask for the next before using the last). */
  private readonly takers: ((r: IteratorResult<T, undefined>) => void)[] = [];
  private offered: { item: T; resolve(): void; reject(err: unknown): void } | undefined;
  private closed: { reason: unknown } | undefined;

  /**
   * Offers `item`; resolves once the reader took it, rejects with the close reason if the
   * channel closes first. One offer at a time.
   */
  offer(item: T): Promise<void> {
    if (this.closed !== undefined) return Promise.reject(this.closed.reason);
    if (this.offered !== undefined) return Promise.reject(new Error("one offer at a time"));
    return new Promise<void>((resolve, reject) => {
      this.offered = { item, resolve, reject };
      this.handOver();
    });
  }

  /** Ends the iteration; a pending offer is rejected with `reason`. Idempotent. */
  close(reason: unknown): void {
    if (this.closed !== undefined) return;
    this.closed = { reason };
    this.offered?.reject(reason);
    this.offered = undefined;
    for (const taker of this.takers.splice(0)) taker({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    return {
      next: () =>
        this.closed !== undefined
          ? Promise.resolve({ value: undefined, done: true })
          : new Promise<IteratorResult<T, undefined>>((resolve) => {
              this.takers.push(resolve);
              this.handOver();
            }),
      return: () => {
        this.close(new Error("the reader stopped"));
        return Promise.resolve({ value: undefined, done: true });
      },
      // A reader that failed (connect calls this when its call aborts with an error).
      throw: (err: unknown) => {
        this.close(err);
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private handOver(): void {
    const offered = this.offered;
    if (offered === undefined || this.takers.length === 0) return;
    const taker = this.takers.shift() as (r: IteratorResult<T, undefined>) => void;
    this.offered = undefined;
    taker({ value: offered.item, done: false });
    offered.resolve();
  }
}

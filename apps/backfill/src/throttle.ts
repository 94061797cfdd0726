/** A rate limiter shared by every worker of a run. */
export interface Throttle {
  /** Resolves when `n` more objects may start; immediately when unlimited. */
  acquire(n: number, signal?: AbortSignal): Promise<void>;
}

/** Options of {@link createThrottle}. */
export interface ThrottleOptions {
  /** Objects per second; 0 or undefined means unlimited. */
  perSecond?: number | undefined;
  /** Clock in ms. Default `performance.now`. */
  now?: () => number;
  /** Sleeps `ms`. Default a `setTimeout` promise that rejects when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A token bucket of `perSecond` tokens per second with a burst of one second's worth (at
 * least 1), so `--throttle=N` keeps the long-run rate at N objects/s while letting a
 * batch of up to N start at once. Callers reserve in arrival order: each acquisition
 * advances a schedule, so concurrent workers never overshoot the rate together.
 */
export function createThrottle(options: ThrottleOptions = {}): Throttle {
  const rate = options.perSecond ?? 0;
  if (!(rate > 0)) return { acquire: async () => {} };
  const now = options.now ?? (() => performance.now());
  const sleep = options.sleep ?? defaultSleep;
  const burst = Math.max(1, rate);
  const interval = 1000 / rate;
  // The time at which the bucket is empty again: tokens = (now - emptyAt) / interval.
  let emptyAt = now() - burst * interval;
  return {
    async acquire(n, signal) {
      const t = now();
      // Never bank more than a burst.
      if (t - emptyAt > burst * interval) emptyAt = t - burst * interval;
      emptyAt += n * interval;
      const wait = emptyAt - t;
      if (wait > 0) await sleep(wait, signal);
    },
  };
}

/** One request of a measurement: `worker` is the client index (0..concurrency-1), `seq` its call count. */
export type Call = (worker: number, seq: number) => Promise<unknown>;

/** Options of {@link runLoad}. */
export interface LoadOptions {
  /** Concurrent closed-loop clients (each waits for its answer before the next call). */
  readonly concurrency: number;
  /** Stop issuing after this long (ms). */
  readonly durationMs: number;
  /** Stop issuing after this many requests in total (bounds fast subjects). */
  readonly maxRequests: number;
  /** The request. */
  readonly call: Call;
}

/** What one measurement saw. */
export interface LoadResult {
  /** Successful requests. */
  readonly requests: number;
  /** Failed requests (not in the latencies). */
  readonly errors: number;
  /** Wall time from the first call to the last answer (ms). */
  readonly elapsedMs: number;
  /** Latency of each successful request in µs, sorted ascending. */
  readonly latenciesUs: Float64Array;
  /** Message of the first failure, for the log. */
  readonly firstError: string | undefined;
}

/**
 * Closed-loop load: `concurrency` clients call `call` back to back until `durationMs` has
 * passed or `maxRequests` were issued, whichever comes first. Bounded in time and count;
 * if more than half of the first 100 calls fail it stops early (a broken subject should
 * not burn the whole duration).
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { concurrency, durationMs, maxRequests, call } = options;
  const latencies: number[] = [];
  let issued = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stop = false;
  const start = performance.now();
  const deadline = start + durationMs;
  const worker = async (w: number): Promise<void> => {
    let seq = 0;
    while (!stop && issued < maxRequests) {
      const t0 = performance.now();
      if (t0 >= deadline) break;
      issued++;
      try {
        await call(w, seq++);
        latencies.push((performance.now() - t0) * 1000);
      } catch (err) {
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
        if (errors > 50 && errors * 2 > issued) stop = true;
      }
    }
  };
  const workers: Promise<void>[] = [];
  for (let w = 0; w < concurrency; w++) workers.push(worker(w));
  await Promise.all(workers);
  const elapsedMs = performance.now() - start;
  return {
    requests: latencies.length,
    errors,
    elapsedMs,
    latenciesUs: Float64Array.from(latencies).sort(),
    firstError,
  };
}

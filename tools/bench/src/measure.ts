import { type Call, runLoad } from "./load.js";
import { cpuNs, rssBytes } from "./processes.js";
import { percentileSorted } from "./stats.js";

/** Something to measure: a request and the process that serves it. */
export interface Subject {
  /** Stable key, e.g. `grpc.GetValue`. */
  readonly id: string;
  /** Process whose CPU and memory are charged to this subject (the harness's own pid for in-process subjects). */
  readonly pid: number;
  /** One request. */
  readonly call: Call;
}

/** One measurement of one subject at one concurrency in one round. */
export interface Sample {
  /** Successful requests per second over the measured window. */
  readonly rps: number;
  /** Median latency (µs). */
  readonly p50Us: number;
  /** 99th-percentile latency (µs). */
  readonly p99Us: number;
  /** CPU time of the serving process per successful request (µs, all threads). */
  readonly cpuUsPerReq: number;
  /** CPU time of the harness (the clients) per successful request (µs). */
  readonly clientCpuUsPerReq: number;
  /** Resident memory of the serving process right after the window (bytes). */
  readonly rssBytes: number;
  readonly requests: number;
  readonly errors: number;
}

/** How long and how much one measurement may run. */
export interface MeasureBudget {
  /** Measured window (ms). */
  readonly durationMs: number;
  /** Unmeasured warm-up before it (ms): JIT, connection set-up, caches. */
  readonly warmupMs: number;
  /** Cap on requests in the window. */
  readonly maxRequests: number;
}

/** Key of a subject at a concurrency, as the result maps use it. */
export function sampleKey(id: string, concurrency: number): string {
  return `${id}@${concurrency}`;
}

/**
 * Measures `subject` with `concurrency` closed-loop clients: warm-up, then a window bounded
 * by `durationMs` and `maxRequests`, with the serving process's CPU (all threads) read
 * before and after. Throws if nothing succeeded.
 */
export async function measure(
  subject: Subject,
  concurrency: number,
  budget: MeasureBudget,
): Promise<Sample> {
  if (budget.warmupMs > 0) {
    await runLoad({
      concurrency,
      durationMs: budget.warmupMs,
      maxRequests: budget.maxRequests,
      call: subject.call,
    });
  }
  const cpu0 = cpuNs(subject.pid);
  const self0 = process.cpuUsage();
  const r = await runLoad({
    concurrency,
    durationMs: budget.durationMs,
    maxRequests: budget.maxRequests,
    call: subject.call,
  });
  const self = process.cpuUsage(self0);
  const cpu1 = cpuNs(subject.pid);
  if (r.requests === 0) {
    throw new Error(`${subject.id} at c=${concurrency}: no request succeeded (${r.firstError})`);
  }
  return {
    rps: (r.requests / r.elapsedMs) * 1000,
    p50Us: percentileSorted(r.latenciesUs, 50),
    p99Us: percentileSorted(r.latenciesUs, 99),
    cpuUsPerReq: (cpu1 - cpu0) / 1000 / r.requests,
    clientCpuUsPerReq: (self.user + self.system) / r.requests,
    rssBytes: rssBytes(subject.pid),
    requests: r.requests,
    errors: r.errors,
  };
}

import { describe, expect, it } from "vitest";
import {
  parseCommandStats,
  parseGrpcLoad,
  parseH2load,
  parseH2loadLog,
  parseRedisBenchmarkCsv,
} from "./generator-output.js";

// Captured from h2load (nghttp2 1.52.0) against odgm SetValue.
const H2LOAD = `starting benchmark...
spawning thread #0: 1 total client(s). 3000 total requests
Application protocol: h2c
progress: 100% done

finished in 4.04s, 742.91 req/s, 26.17KB/s
requests: 3000 total, 3000 started, 3000 done, 3000 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 3000 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 105.66KB (108200) total, 8.92KB (9132) headers (space savings 96.05%), 14.65KB (15000) data
                     min         max         mean         sd        +/- sd
time for request:    24.36ms    182.26ms     85.68ms     12.51ms    70.10%
`;

describe("parseH2load", () => {
  it("reads the rate, the request and status counts and the DATA bytes", () => {
    expect(parseH2load(H2LOAD)).toEqual({
      rps: 742.91,
      total: 3000,
      started: 3000,
      done: 3000,
      succeeded: 3000,
      failed: 0,
      errored: 0,
      timeout: 0,
      status2xx: 3000,
      status3xx: 0,
      status4xx: 0,
      status5xx: 0,
      dataBytes: 15000,
    });
  });
  it("accepts runs shorter than a second (ms)", () => {
    const ms = H2LOAD.replace("finished in 4.04s, 742.91", "finished in 410.65ms, 12175.82");
    expect(parseH2load(ms).rps).toBe(12175.82);
  });
  it("throws on output without a summary", () => {
    expect(() => parseH2load("connect failed")).toThrow(/no finished line/);
  });
});

describe("parseH2loadLog", () => {
  it("takes nearest-rank percentiles of the 2xx lines' durations", () => {
    const lines = Array.from(
      { length: 100 },
      (_, i) => `17954791147920${i}\t200\t${(100 - i) * 10}`,
    );
    lines.push("1795479114792999\t503\t999999", "1795479114792998\t204\t1", "");
    const r = parseH2loadLog(lines.join("\n"));
    expect(r.count).toBe(101);
    expect(r.p50Us).toBe(500);
    expect(r.p99Us).toBe(990);
  });
  it("is NaN for an empty log", () => {
    expect(parseH2loadLog("").count).toBe(0);
    expect(parseH2loadLog("").p99Us).toBeNaN();
  });
});

describe("parseRedisBenchmarkCsv", () => {
  it("reads rps and the p50/p99 columns (ms → µs) of the last line", () => {
    const out = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"hset h:hot f0 abcdefghijklmnop","30656.04","1.843","0.320","1.543","4.127","6.255","11.007"
`;
    expect(parseRedisBenchmarkCsv(out)).toEqual({
      test: "hset h:hot f0 abcdefghijklmnop",
      rps: 30656.04,
      p50Us: 1543,
      p99Us: 6255,
    });
  });
  it("throws without a result line", () => {
    expect(() => parseRedisBenchmarkCsv("Could not connect")).toThrow(/no CSV result/);
  });
});

describe("parseGrpcLoad", () => {
  it("reads the last JSON line after the window markers and decodes grpc-message", () => {
    const out = `window-start
window-end
{"bodies":1,"connections":1,"inflight":64,"warmup_ms":0,"duration_ms":300,"sent_total":907,"ok_total":0,"err_total":907,"grpc_err":907,"http_err":0,"stream_err":0,"incomplete":0,"window_ok":0,"window_err":843,"rps":0.0,"p50_us":-1,"p90_us":-1,"p99_us":-1,"max_us":-1,"first_error":"grpc-status 3: %5Bnone_provided%5D%20an%20object%20id%20is%20required"}
`;
    const r = parseGrpcLoad(out);
    expect(r.grpc_err).toBe(907);
    expect(r.window_err).toBe(843);
    expect(r.first_error).toBe("grpc-status 3: [none_provided] an object id is required");
  });
  it("throws without a result", () => {
    expect(() => parseGrpcLoad("window-start\n")).toThrow(/no result/);
  });
});

describe("parseCommandStats", () => {
  const info =
    "# Commandstats\r\ncmdstat_config:calls=2,usec=30,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\ncmdstat_hset:calls=100000,usec=107482,usec_per_call=1.07,rejected_calls=1,failed_calls=2\r\n";
  it("reads calls, failed and rejected calls of one command", () => {
    expect(parseCommandStats(info, "hset")).toEqual({
      calls: 100000,
      failedCalls: 2,
      rejectedCalls: 1,
    });
  });
  it("is zero for a command never called", () => {
    expect(parseCommandStats(info, "hget")).toEqual({ calls: 0, failedCalls: 0, rejectedCalls: 0 });
  });
});

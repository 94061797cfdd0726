// Tables and the markdown document of the writes benchmark (pure: results in, text out).
import { fmtLoad, type MachineInfo } from "./machine.js";
import {
  metricRatio,
  metricSpread,
  type PairRow,
  type Results,
  renderPairTable,
} from "./report.js";
import { fmt, fmtMiB, fmtRatioSpread, fmtSpread, renderTable } from "./table.js";

/** One subject of the writes benchmark, as the report names it. */
export interface WriteSubjectInfo {
  /** Result key, e.g. `odgm.SetValue/1obj`. */
  readonly id: string;
  /** Server and operation, e.g. `odgm SetValue`. */
  readonly server: string;
  /** Load generator and its shape, e.g. `h2load -c 64 -m 1`. */
  readonly generator: string;
  /** What is written, e.g. `one object, key f0`. */
  readonly target: string;
}

/** Subject ids of the writes benchmark (the ratio rows refer to them). */
export const W = {
  odgmOne: "odgm.SetValue/1obj",
  odgmOneGl: "odgm.SetValue/1obj/grpc-load",
  odgmOneConn: "odgm.SetValue/1obj/1conn",
  odgmMany: "odgm.SetValue/10k",
  redisOne: "redis.HSET/1key",
  redisMany: "redis.HSET/10k",
  etcdOne: "etcd.Put/1key",
  etcdOneGl: "etcd.Put/1key/grpc-load",
  etcdMany: "etcd.Put/10k",
  h2Empty: "node.http2/empty",
} as const;

/** The same-run ratios the benchmark exists for, first the three the issue asks about. */
export const WRITE_RATIOS: readonly PairRow[] = [
  { label: "ODGM one object / Redis one key", a: W.odgmOne, b: W.redisOne },
  { label: "ODGM 10k objects / Redis 10k keys", a: W.odgmMany, b: W.redisMany },
  { label: "ODGM 10k objects / etcd 10k keys", a: W.odgmMany, b: W.etcdMany },
  { label: "ODGM 10k objects / Redis one key", a: W.odgmMany, b: W.redisOne },
  { label: "ODGM one object / etcd one key", a: W.odgmOne, b: W.etcdOne },
  { label: "ODGM 10k objects / ODGM one object", a: W.odgmMany, b: W.odgmOne },
  { label: "ODGM one object: 1 connection / 64 connections", a: W.odgmOneConn, b: W.odgmOne },
  { label: "ODGM 10k objects / raw node:http2 empty reply", a: W.odgmMany, b: W.h2Empty },
  { label: "ODGM one object / raw node:http2 empty reply", a: W.odgmOneGl, b: W.h2Empty },
];

/** Generator cross-checks: the same subject driven by grpc-load and by h2load. */
export const GENERATOR_CHECKS: readonly PairRow[] = [
  { label: "ODGM one object: grpc-load / h2load", a: W.odgmOneGl, b: W.odgmOne },
  { label: "etcd one key: grpc-load / h2load", a: W.etcdOneGl, b: W.etcdOne },
];

/** How a writes run was configured, for the document's header. */
export interface WritesRunInfo {
  readonly command: string;
  readonly date: string;
  readonly machine: MachineInfo;
  readonly loadEnd: readonly number[];
  /** Load average (1 min) at the start of each round. */
  readonly roundLoad: readonly number[];
  /** Filesystem type of the temp dir holding every server's data (fsync cost depends on it). */
  readonly dataFs: string;
  readonly rounds: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly inflight: number;
  readonly connections: number;
  readonly distinct: number;
  /** `name version` of each tool and server. */
  readonly versions: readonly string[];
  /** One line per verification the run made (object counts, version sums, revisions). */
  readonly checks: readonly string[];
  readonly totalSeconds: number;
  readonly only: string | undefined;
}

const NOT_MEASURED = "not measured";

/** The subjects table: req/s, latency, server and client CPU per request, server RSS. */
export function renderWritesTable(subjects: readonly WriteSubjectInfo[], results: Results): string {
  const header = [
    "subject",
    "server, target",
    "generator",
    "req/s",
    "p50 ms",
    "p99 ms",
    "server CPU µs/req",
    "client CPU µs/req",
    "server RSS",
  ];
  const ms = (us: number): string => fmt(us / 1000);
  const rows = subjects.map((s) => {
    const head = [`\`${s.id}\``, `${s.server}, ${s.target}`, s.generator];
    if (!results.has(s.id)) return [...head, NOT_MEASURED];
    return [
      ...head,
      fmtSpread(metricSpread(results, s.id, "rps")),
      ms(metricSpread(results, s.id, "p50Us").median),
      ms(metricSpread(results, s.id, "p99Us").median),
      fmtSpread(metricSpread(results, s.id, "cpuUsPerReq")),
      fmt(metricSpread(results, s.id, "clientCpuUsPerReq").median),
      fmtMiB(metricSpread(results, s.id, "rssBytes").max),
    ];
  });
  return renderTable(header, rows, [3, 4, 5, 6, 7, 8]);
}

/** req/s of every subject in every round, with the 1-minute load average at the round's start. */
export function renderRoundsTable(
  subjects: readonly WriteSubjectInfo[],
  results: Results,
  roundLoad: readonly number[],
): string {
  const header = ["round", "load (1 min)", ...subjects.map((s) => s.id)];
  const rows = roundLoad.map((load, r) => [
    String(r + 1),
    load.toFixed(2),
    ...subjects.map((s) => fmt(results.get(s.id)?.[r]?.rps ?? Number.NaN)),
  ]);
  return renderTable(
    header,
    rows,
    header.map((_, i) => i),
  );
}

/** The compact ratio lines printed at the end of a run (req/s and server CPU per request). */
export function ratioLines(results: Results): string[] {
  return [...WRITE_RATIOS, ...GENERATOR_CHECKS]
    .filter((r) => results.has(r.a) && results.has(r.b))
    .map((r) => {
      const rps = fmtRatioSpread(metricRatio(results, r.a, r.b, "rps"));
      const cpu = fmtRatioSpread(metricRatio(results, r.a, r.b, "cpuUsPerReq"));
      return `${r.label}: req/s ${rps}, server CPU/req ${cpu}`;
    });
}

/** The whole RESULTS-writes.md document. */
export function buildWritesMarkdown(
  info: WritesRunInfo,
  subjects: readonly WriteSubjectInfo[],
  results: Results,
): string {
  const m = info.machine;
  const parts: string[] = [];
  parts.push("# Write path: odgm SetValue vs Redis HSET (AOF fsync always) vs etcd Put\n");
  parts.push(
    "Generated by `tools/bench/src/writes-main.ts` (see the README's *Writes* section). Every " +
      "server is a real child process writing durably (odgm: RocksDB, WAL synced; Redis: " +
      "`appendfsync always`; etcd: one member, WAL fsync), driven by C load generators " +
      `with ${info.inflight} requests in flight, every round running every subject once, in a fresh order, after the servers went idle. ` +
      "**Ratios are the figures**; absolute numbers depend on the machine (and its disk's fsync).\n",
  );
  parts.push(
    renderTable(
      ["", ""],
      [
        ["command", `\`${info.command}\``],
        ["date", info.date],
        ["machine", `${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.kernel}`],
        ["data directories", `temp dir on ${info.dataFs}`],
        ["node", m.node],
        ["load average at start (1/5/15 min)", fmtLoad(m.loadStart)],
        ["load average at end", fmtLoad(info.loadEnd)],
        [
          "per measurement",
          `${info.warmupMs} ms warm-up, then a ~${info.windowMs} ms window (grpc-load: timed; h2load and redis-benchmark: a request count sized from the subject's last rate)`,
        ],
        ["rounds", String(info.rounds)],
        [
          "load shape",
          `${info.inflight} requests in flight over ${info.connections} connection(s) unless the subject says otherwise; closed loop`,
        ],
        ["distinct objects / keys", String(info.distinct)],
        ["tools", info.versions.join("; ")],
        ["subjects", info.only === undefined ? "all" : `only ids matching \`${info.only}\``],
        ["total time", `${fmt(info.totalSeconds)} s`],
      ],
    ),
  );
  parts.push("\n## Subjects\n");
  parts.push(
    "req/s and server CPU: median (min–max over rounds); latency: median over rounds of each " +
      "round's percentile; server CPU = utime+stime of the server process (all threads, " +
      "`/proc/<pid>/stat`) over the window, per successful request; client CPU = the load " +
      "generator's own CPU per request (it shares the cores with the server); RSS = peak VmRSS.\n",
  );
  parts.push(renderWritesTable(subjects, results));
  const pair = (title: string, rows: readonly PairRow[]): void => {
    const present = rows.filter((r) => results.has(r.a) || results.has(r.b));
    if (present.length === 0) return;
    parts.push(renderPairTable({ title, aName: "a", bName: "b", rows: present }, results));
  };
  parts.push("\n## Ratios (paired per round)\n");
  parts.push(
    "`a/b`: per-round ratio, median (min–max). req/s above 1 = a serves more; p99 and CPU " +
      "above 1 = a is slower or costlier.\n",
  );
  pair("Same-run ratios", WRITE_RATIOS);
  pair("Load-generator cross-check (should be ≈ 1.00×)", GENERATOR_CHECKS);
  parts.push("## req/s per round\n");
  parts.push(renderRoundsTable(subjects, results, info.roundLoad));
  parts.push("\n## Verification\n");
  for (const c of info.checks) parts.push(`- ${c}`);
  return `${parts.join("\n")}\n`;
}

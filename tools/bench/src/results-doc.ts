import { fmtLoad, type MachineInfo } from "./machine.js";
import { type MeasureBudget, sampleKey } from "./measure.js";
import {
  type GroupTable,
  metricRatio,
  type PairRow,
  type PairTable,
  type Results,
  renderGroupTable,
  renderPairTable,
} from "./report.js";
import { ratio } from "./stats.js";
import { fmt, fmtMiB, fmtRatioSpread, renderTable } from "./table.js";

/** How a run was configured, for the header of the results. */
export interface RunInfo {
  readonly mode: string;
  readonly command: string;
  readonly date: string;
  readonly machine: MachineInfo;
  readonly loadEnd: readonly number[];
  readonly rounds: number;
  readonly budget: MeasureBudget;
  readonly concurrency: readonly number[];
  readonly mainObjects: number;
  readonly scaleSizes: readonly number[];
  readonly entriesPerObject: number;
  /** Path of redis-server, or undefined when it was not found. */
  readonly redis: string | undefined;
  readonly totalSeconds: number;
  /** The `--only` filter, if any. */
  readonly only: string | undefined;
}

/** Storage and memory figures of one data size. */
export interface ScaleInfo {
  /** Numeric-id objects of the data set (the size the tables name). */
  readonly size: number;
  /** Objects stored in odgm (all kinds). */
  readonly objects: number;
  /** Entries stored in odgm. */
  readonly entries: number;
  /** Time to load them through the entry store (ms). */
  readonly loadMs: number;
  /** odgm RSS right after start (bytes). */
  readonly idleRss: number;
  /** odgm RSS after all rounds (bytes). */
  readonly rss: number;
  /** Size of the data directory right after loading, before odgm opened it (bytes). */
  readonly diskBytes: number;
  /** Redis `used_memory` right after loading the same objects (bytes); NaN when not measured. */
  readonly redisUsedMemory: number;
}

/** A CPU profile of the 1k node, summarized (see `profile.ts`). */
export interface ProfileSummary {
  readonly buckets: readonly { bucket: string; share: number }[];
  readonly functions: readonly { fn: string; bucket: string; share: number }[];
}

/** `1k`, `100k`, `1M`. */
export function sizeLabel(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

const k = sampleKey;

function groupTables(info: RunInfo): GroupTable[] {
  const out: GroupTable[] = [];
  for (const c of info.concurrency) {
    const g = (id: string): string => k(`grpc.${id}`, c);
    out.push({
      title: `gRPC, ${c} concurrent client${c === 1 ? "" : "s"} (connect-node client, one HTTP/2 session)`,
      baselines: [
        { label: "empty RPC", key: g("Capabilities") },
        { label: "raw h2", key: k("h2.empty", c) },
      ],
      rows: [
        { label: "raw node:http2, gRPC-framed empty reply (baseline)", key: k("h2.empty", c) },
        { label: "connect-node empty RPC: odgm Capabilities (baseline)", key: g("Capabilities") },
        { label: "grpc.health.v1 Health/Check on odgm", key: g("HealthCheck") },
        { label: "SetValue (sync)", key: g("SetValue") },
        { label: "GetValue", key: g("GetValue") },
        { label: "BatchSetValues, 10 entries (sync)", key: g("Batch10") },
        { label: "BatchSetValues, 50 entries (sync)", key: g("Batch50") },
        { label: "Get, 256-entry object", key: g("Get256") },
        { label: "ListValues, 100 entries (stream)", key: g("List100") },
      ],
    });
  }
  for (const c of info.concurrency) {
    const r = (id: string): string => k(`rest.${id}`, c);
    out.push({
      title: `REST, ${c} concurrent client${c === 1 ? "" : "s"} (HTTP/1.1 keep-alive, ${c} socket${c === 1 ? "" : "s"})`,
      baselines: [
        { label: "Hono route", key: k("hono.trivial", c) },
        { label: "/healthz", key: r("healthz") },
      ],
      rows: [
        { label: "trivial Hono route, @hono/node-server (baseline)", key: k("hono.trivial", c) },
        { label: "odgm GET /healthz (baseline, same server)", key: r("healthz") },
        { label: "PUT value (sync)", key: r("PutValue") },
        { label: "GET value", key: r("GetValue") },
        { label: "POST batch, 10 entries (sync)", key: r("Batch10") },
        { label: "POST batch, 50 entries (sync)", key: r("Batch50") },
        { label: "GET object, 256 entries", key: r("Get256") },
        { label: "GET values?limit=100", key: r("List100") },
      ],
    });
  }
  return out;
}

function pairTables(info: RunInfo): PairTable[] {
  const perC = (rows: (c: number) => PairRow[]): PairRow[] => info.concurrency.flatMap(rows);
  const tables: PairTable[] = [
    {
      title: "odgm (gRPC) vs Redis HSET/HGET (the per-field store people reach for instead)",
      aName: "odgm",
      bName: "Redis",
      rows: perC((c) => [
        { label: `SetValue vs HSET, c=${c}`, a: k("grpc.SetValue", c), b: k("redis.HSET", c) },
        { label: `GetValue vs HGET, c=${c}`, a: k("grpc.GetValue", c), b: k("redis.HGET", c) },
        {
          label: `BatchSetValues 10 vs HSET 10 fields, c=${c}`,
          a: k("grpc.Batch10", c),
          b: k("redis.HSET10", c),
        },
        {
          label: `BatchSetValues 50 vs HSET 50 fields, c=${c}`,
          a: k("grpc.Batch50", c),
          b: k("redis.HSET50", c),
        },
        {
          label: `Get 256 entries vs HGETALL 256, c=${c}`,
          a: k("grpc.Get256", c),
          b: k("redis.HGETALL256", c),
        },
        {
          label: `ListValues 100 vs HGETALL 100, c=${c}`,
          a: k("grpc.List100", c),
          b: k("redis.HGETALL100", c),
        },
      ]),
    },
    {
      title: "odgm (gRPC) vs raw RocksDB through the same binding (in the harness process)",
      aName: "odgm",
      bName: "RocksDB",
      rows: perC((c) => [
        {
          label: `SetValue vs put (synced batch of 1), c=${c}`,
          a: k("grpc.SetValue", c),
          b: k("rocks.put", c),
        },
        {
          label: `GetValue vs getMany([key]), c=${c}`,
          a: k("grpc.GetValue", c),
          b: k("rocks.get", c),
        },
        {
          label: `BatchSetValues 10 vs synced batch of 10, c=${c}`,
          a: k("grpc.Batch10", c),
          b: k("rocks.batch10", c),
        },
        {
          label: `BatchSetValues 50 vs synced batch of 50, c=${c}`,
          a: k("grpc.Batch50", c),
          b: k("rocks.batch50", c),
        },
      ]),
    },
    {
      title:
        "String ids vs numeric ids (gRPC, same node, same data; seed 000 §5 budget ≤ +15% p99)",
      aName: "string id",
      bName: "numeric id",
      p99Budget: 1.15,
      rows: perC((c) => [
        { label: `GetValue, c=${c}`, a: k("grpc.GetValue.str", c), b: k("grpc.GetValue", c) },
        { label: `SetValue, c=${c}`, a: k("grpc.SetValue.str", c), b: k("grpc.SetValue", c) },
      ]),
    },
  ];
  const scaleRows: PairRow[] = [];
  for (const size of info.scaleSizes) {
    const s = sizeLabel(size);
    for (const c of info.concurrency) {
      scaleRows.push(
        {
          label: `GetValue @${s} vs @1k, c=${c}`,
          a: k(`grpc@${size}.GetValue`, c),
          b: k("grpc.GetValue", c),
        },
        {
          label: `SetValue @${s} vs @1k, c=${c}`,
          a: k(`grpc@${size}.SetValue`, c),
          b: k("grpc.SetValue", c),
        },
        {
          label: `Redis HGET @${s} vs @1k, c=${c}`,
          a: k(`redis@${size}.HGET`, c),
          b: k("redis.HGET", c),
        },
      );
    }
  }
  tables.push({
    title: "Scaling with data size (random objects of the stored set; separate odgm node per size)",
    aName: "large",
    bName: "1k",
    rows: scaleRows,
  });
  return tables;
}

/** Renders the storage/memory table and the per-million-entries slope. */
export function renderMemoryTable(scale: readonly ScaleInfo[]): string {
  const header = [
    "data set",
    "objects",
    "entries",
    "load time",
    "odgm RSS idle",
    "odgm RSS after all rounds",
    "data dir after load",
    "disk B/entry",
    "Redis used_memory after load",
    "Redis B/entry",
  ];
  const rows = scale.map((s) => [
    sizeLabel(s.size),
    fmt(s.objects),
    fmt(s.entries),
    `${fmt(s.loadMs / 1000)} s`,
    fmtMiB(s.idleRss),
    fmtMiB(s.rss),
    fmtMiB(s.diskBytes),
    fmt(s.diskBytes / s.entries),
    fmtMiB(s.redisUsedMemory),
    fmt(s.redisUsedMemory / s.entries),
  ]);
  let out = renderTable(header, rows, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const first = scale[0];
  const last = scale[scale.length - 1];
  if (first !== undefined && last !== undefined && last !== first) {
    const perM = (a: number, b: number): number => ratio(b - a, last.entries - first.entries) * 1e6;
    out +=
      `\nPer million entries (slope from ${sizeLabel(first.size)} to ${sizeLabel(last.size)}): ` +
      `odgm RSS right after start ${fmtMiB(perM(first.idleRss, last.idleRss))}; ` +
      `data dir ${fmtMiB(perM(first.diskBytes, last.diskBytes))}; ` +
      `Redis used_memory ${fmtMiB(perM(first.redisUsedMemory, last.redisUsedMemory))}. ` +
      "(RSS after all rounds is not comparable across sizes: the 1k node serves every other " +
      "measurement too.)\n";
  }
  return out;
}

/** Headline ratios (median of the per-round paired ratios, min–max in brackets); a line is left out when a subject it names was not measured (`--only`). */
export function headlines(info: RunInfo, results: Results): string[] {
  const c = Math.max(...info.concurrency);
  const r = (a: string, b: string, m: "rps" | "p99Us" | "cpuUsPerReq" = "rps"): string =>
    fmtRatioSpread(metricRatio(results, a, b, m));
  const lines: { needs: string[]; text: () => string }[] = [
    {
      needs: [k("grpc.GetValue", c), k("grpc.Capabilities", c), k("h2.empty", c)],
      text: () =>
        `GetValue over gRPC at c=${c}: ${r(k("grpc.GetValue", c), k("grpc.Capabilities", c))} the req/s of an empty RPC on the same server, ` +
        `${r(k("grpc.GetValue", c), k("h2.empty", c))} of raw node:http2; server CPU/request ${r(k("grpc.GetValue", c), k("grpc.Capabilities", c), "cpuUsPerReq")} the empty RPC's ` +
        `(at c=1: ${r(k("grpc.GetValue", 1), k("grpc.Capabilities", 1), "cpuUsPerReq")}).`,
    },
    {
      needs: [k("grpc.SetValue", c), k("grpc.Capabilities", c), k("rocks.put", c)],
      text: () =>
        `SetValue (sync) over gRPC at c=${c}: ${r(k("grpc.SetValue", c), k("grpc.Capabilities", c))} the empty RPC's req/s; ` +
        `${r(k("grpc.SetValue", c), k("rocks.put", c))} the req/s of a raw synced RocksDB put.`,
    },
    {
      needs: [k("grpc.GetValue", c), k("redis.HGET", c)],
      text: () =>
        `GetValue vs Redis HGET at c=${c}: req/s ${r(k("grpc.GetValue", c), k("redis.HGET", c))}, server CPU/request ${r(k("grpc.GetValue", c), k("redis.HGET", c), "cpuUsPerReq")}; ` +
        `at c=1 req/s ${r(k("grpc.GetValue", 1), k("redis.HGET", 1))}.`,
    },
    {
      needs: [k("rest.GetValue", c), k("hono.trivial", c)],
      text: () =>
        `REST GET value at c=${c}: ${r(k("rest.GetValue", c), k("hono.trivial", c))} the req/s of a trivial Hono route; server CPU/request ${r(k("rest.GetValue", c), k("hono.trivial", c), "cpuUsPerReq")}.`,
    },
    {
      needs: [k("grpc.GetValue.str", c), k("grpc.GetValue", c)],
      text: () =>
        `String vs numeric ids, GetValue p99 at c=1: ${r(k("grpc.GetValue.str", 1), k("grpc.GetValue", 1), "p99Us")}, at c=${c}: ${r(k("grpc.GetValue.str", c), k("grpc.GetValue", c), "p99Us")} (budget ≤ 1.15×); ` +
        `server CPU/request at c=${c}: ${r(k("grpc.GetValue.str", c), k("grpc.GetValue", c), "cpuUsPerReq")}.`,
    },
  ];
  for (const size of info.scaleSizes) {
    const big = k(`grpc@${size}.GetValue`, 1);
    lines.push({
      needs: [big, k("grpc.GetValue", 1)],
      text: () =>
        `GetValue with ${sizeLabel(size)} objects stored vs 1k, c=1: req/s ${r(big, k("grpc.GetValue", 1))}, p99 ${r(big, k("grpc.GetValue", 1), "p99Us")}, server CPU/request ${r(big, k("grpc.GetValue", 1), "cpuUsPerReq")}.`,
    });
  }
  return lines.filter((l) => l.needs.every((key) => results.has(key))).map((l) => l.text());
}

/** The whole RESULTS.md. */
export function buildResultsMarkdown(
  info: RunInfo,
  results: Results,
  scale: readonly ScaleInfo[],
  profile?: ProfileSummary,
): string {
  const m = info.machine;
  const parts: string[] = [];
  parts.push("# odgm end-to-end benchmark results\n");
  parts.push(
    "Generated by `tools/bench` (`@oprc/bench`). Every headline figure is a ratio against a " +
      "baseline measured in the same run; each cell is the median over rounds, with min–max " +
      "of the per-round paired ratio in brackets. Subjects are interleaved round-robin so " +
      "drift of the shared machine hits all of them alike.\n",
  );
  parts.push("## Run\n");
  parts.push(
    renderTable(
      ["", ""],
      [
        ["command", `\`${info.command}\``],
        ["mode", info.mode],
        ["date", info.date],
        ["machine", `${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.kernel}`],
        ["node", m.node],
        ["load average at start (1/5/15 min)", fmtLoad(m.loadStart)],
        ["load average at end", fmtLoad(info.loadEnd)],
        [
          "per measurement",
          `${info.budget.warmupMs} ms warm-up, then ${info.budget.durationMs} ms or ${info.budget.maxRequests} requests, whichever first`,
        ],
        ["rounds", String(info.rounds)],
        ["concurrency", info.concurrency.join(", ")],
        [
          "data set",
          `${info.mainObjects} numeric-id + ${info.mainObjects} string-id objects × ${info.entriesPerObject} entries (16-byte values), a 256-entry and a 100-entry object; scaling sets: ${info.scaleSizes.map(sizeLabel).join(", ")} numeric-id objects`,
        ],
        [
          "loading",
          "straight into each node's data dir through the entry store (`createEntryStore` + `openRocksEngine`, WAL sync off, 512 objects in flight, then reopened once so the WAL is flushed to SST files) before odgm starts",
        ],
        [
          "odgm",
          "real child process (`apps/odgm/src/bin/odgm.ts` from source), RocksDB, `ODGM_SYNC_WRITES=true`, one collection `bench` with 1 partition",
        ],
        [
          "Redis",
          info.redis === undefined
            ? "not measured (redis-server not found)"
            : `${info.redis}, no RDB/AOF, ioredis client, one connection`,
        ],
        ["subjects", info.only === undefined ? "all" : `only keys matching \`${info.only}\``],
        ["total time", `${fmt(info.totalSeconds)} s`],
      ],
    ),
  );
  parts.push("\n## Headlines\n");
  for (const h of headlines(info, results)) parts.push(`- ${h}`);
  parts.push("\n## Service end to end\n");
  parts.push(
    "Columns: req/s median (min–max over rounds); `req/s × X` = paired ratio to baseline X " +
      "(below 1 = slower); latency percentiles are medians over rounds; server CPU = CPU time " +
      "of all threads of the serving process (`/proc/<pid>/task/*/schedstat`) per request; " +
      "client CPU = the harness process (the load generator shares the 2 cores); server RSS = " +
      "peak VmRSS seen.\n",
  );
  // Tables with nothing measured (an `--only` run) are left out.
  for (const t of groupTables(info)) {
    if (t.rows.some((row) => results.has(row.key))) parts.push(renderGroupTable(t, results));
  }
  parts.push("## Against the references\n");
  parts.push(
    "`a/b` columns are paired per-round ratios: req/s above 1 means a serves more; p99 and " +
      "CPU above 1 mean a is slower or costlier. Raw RocksDB runs inside the harness, so its " +
      '"server CPU" includes the load generator.\n',
  );
  for (const t of pairTables(info)) {
    const rows = t.rows.filter((row) => results.has(row.a) || results.has(row.b));
    if (rows.length > 0) parts.push(renderPairTable({ ...t, rows }, results));
  }
  parts.push("### Storage and memory by data size\n");
  parts.push(renderMemoryTable(scale));
  if (profile !== undefined) {
    parts.push("\n### Where the 1k node's CPU went (V8 CPU profile of the whole run, busy time)\n");
    parts.push(
      renderTable(
        ["code", "share of busy self time"],
        profile.buckets.slice(0, 15).map((p) => [p.bucket, `${(p.share * 100).toFixed(1)}%`]),
        [1],
      ),
    );
    parts.push("\nTop functions by self time:\n");
    parts.push(
      renderTable(
        ["function", "code", "share"],
        profile.functions.map((p) => [p.fn, p.bucket, `${(p.share * 100).toFixed(1)}%`]),
        [2],
      ),
    );
  }
  return `${parts.join("\n")}\n`;
}

import type { Sample } from "./measure.js";
import { pairedRatio, type Spread, spread } from "./stats.js";
import { fmt, fmtMiB, fmtRatioSpread, fmtSpread, renderTable } from "./table.js";

/** Samples per key (`id@concurrency`), indexed by round (`undefined` where a round has none). */
export type Results = ReadonlyMap<string, readonly (Sample | undefined)[]>;

type Metric = "rps" | "p50Us" | "p99Us" | "cpuUsPerReq" | "clientCpuUsPerReq" | "rssBytes";

/** The per-round values of one metric of one key (`undefined` where missing). */
export function series(results: Results, key: string, metric: Metric): (number | undefined)[] {
  return (results.get(key) ?? []).map((s) => s?.[metric]);
}

/** Min/median/max over rounds of one metric of one key. */
export function metricSpread(results: Results, key: string, metric: Metric): Spread {
  return spread(series(results, key, metric).filter((v): v is number => v !== undefined));
}

/** Paired per-round ratio `a/b` of one metric. */
export function metricRatio(results: Results, a: string, b: string, metric: Metric): Spread {
  return pairedRatio(series(results, a, metric), series(results, b, metric));
}

/** A row of a {@link GroupTable}: a label and the sample key it shows. */
export interface TableRow {
  readonly label: string;
  readonly key: string;
}

/** Subjects against shared baselines: one ratio column per baseline. */
export interface GroupTable {
  readonly title: string;
  /** Rows, baselines included (they show 1.00× against themselves). */
  readonly rows: readonly TableRow[];
  /** Baselines for the req/s ratio columns; the first is also the CPU-ratio baseline. */
  readonly baselines: readonly TableRow[];
}

const NOT_MEASURED = "not measured";

/**
 * Renders a {@link GroupTable}: req/s median (min–max over rounds), req/s ratio to each
 * baseline (paired per round), p50/p99 latency, server CPU per request and its ratio to the
 * first baseline, client CPU per request, and the serving process's peak RSS.
 */
export function renderGroupTable(t: GroupTable, results: Results): string {
  const header = [
    "subject",
    "req/s",
    ...t.baselines.map((b) => `req/s × ${b.label}`),
    "p50 µs",
    "p99 µs",
    "server CPU µs/req",
    ...(t.baselines[0] === undefined ? [] : [`CPU/req × ${t.baselines[0].label}`]),
    "client CPU µs/req",
    "server RSS",
  ];
  const rows = t.rows.map((r) => {
    if (!results.has(r.key)) return [r.label, NOT_MEASURED];
    const first = t.baselines[0];
    return [
      r.label,
      fmtSpread(metricSpread(results, r.key, "rps")),
      ...t.baselines.map((b) => fmtRatioSpread(metricRatio(results, r.key, b.key, "rps"))),
      fmt(metricSpread(results, r.key, "p50Us").median),
      fmt(metricSpread(results, r.key, "p99Us").median),
      fmt(metricSpread(results, r.key, "cpuUsPerReq").median),
      ...(first === undefined
        ? []
        : [fmtRatioSpread(metricRatio(results, r.key, first.key, "cpuUsPerReq"))]),
      fmt(metricSpread(results, r.key, "clientCpuUsPerReq").median),
      fmtMiB(metricSpread(results, r.key, "rssBytes").max),
    ];
  });
  const numeric = header.map((_, i) => i).filter((i) => i > 0);
  return `### ${t.title}\n\n${renderTable(header, rows, numeric)}`;
}

/** A row of a {@link PairTable}: subject `a` against reference `b`. */
export interface PairRow {
  readonly label: string;
  readonly a: string;
  readonly b: string;
}

/** Subjects paired one-to-one with references. */
export interface PairTable {
  readonly title: string;
  /** Column name of the `a` side. */
  readonly aName: string;
  /** Column name of the `b` side. */
  readonly bName: string;
  readonly rows: readonly PairRow[];
  /** Optional budget on the p99 ratio a/b (e.g. 1.15): adds a verdict column. */
  readonly p99Budget?: number;
}

/** The verdict of a p99 ratio against its budget: judged on the median over rounds. */
export function verdict(r: Spread, budget: number): string {
  if (!Number.isFinite(r.median)) return NOT_MEASURED;
  return r.median <= budget ? "within" : "over";
}

/**
 * Renders a {@link PairTable}: req/s, p99 and server CPU/request of both sides and their
 * paired per-round ratios (a/b; req/s above 1 means a is faster, p99 and CPU above 1 mean
 * a is slower / costlier).
 */
export function renderPairTable(t: PairTable, results: Results): string {
  const { aName: a, bName: b } = t;
  const header = [
    "operation",
    `${a} req/s`,
    `${b} req/s`,
    "req/s a/b",
    `${a} p99 µs`,
    `${b} p99 µs`,
    "p99 a/b",
    `${a} CPU µs/req`,
    `${b} CPU µs/req`,
    "CPU a/b",
    ...(t.p99Budget === undefined ? [] : [`p99 budget ≤ ${t.p99Budget.toFixed(2)}×`]),
  ];
  const rows = t.rows.map((r) => {
    const p99 = metricRatio(results, r.a, r.b, "p99Us");
    const cell = (key: string, m: Metric): string =>
      results.has(key) ? fmt(metricSpread(results, key, m).median) : NOT_MEASURED;
    return [
      r.label,
      cell(r.a, "rps"),
      cell(r.b, "rps"),
      fmtRatioSpread(metricRatio(results, r.a, r.b, "rps")),
      cell(r.a, "p99Us"),
      cell(r.b, "p99Us"),
      fmtRatioSpread(p99),
      cell(r.a, "cpuUsPerReq"),
      cell(r.b, "cpuUsPerReq"),
      fmtRatioSpread(metricRatio(results, r.a, r.b, "cpuUsPerReq")),
      ...(t.p99Budget === undefined ? [] : [verdict(p99, t.p99Budget)]),
    ];
  });
  const numeric = header.map((_, i) => i).filter((i) => i > 0);
  return `### ${t.title}\n\n${renderTable(header, rows, numeric)}`;
}

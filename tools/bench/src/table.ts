import type { Spread } from "./stats.js";

/**
 * Renders a GitHub-flavoured markdown table. Cells are escaped for `|` and newlines;
 * columns whose header starts with a digit-like alignment marker are not special-cased:
 * every column is left-aligned except those listed in `numeric`, which are right-aligned.
 *
 * @example
 * renderTable(["op", "req/s"], [["GetValue", "1 234"]], [1]);
 */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  numeric: readonly number[] = [],
): string {
  const esc = (s: string): string => s.replaceAll("|", "\\|").replaceAll("\n", " ");
  const right = new Set(numeric);
  const lines = [
    `| ${header.map(esc).join(" | ")} |`,
    `|${header.map((_, i) => (right.has(i) ? "---:" : "---")).join("|")}|`,
  ];
  for (const row of rows) {
    const cells = header.map((_, i) => esc(row[i] ?? ""));
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return `${lines.join("\n")}\n`;
}

/** A number with about three significant digits (`12 345`, `123`, `12.3`, `1.23`); `—` for NaN. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return "—";
  const a = Math.abs(n);
  if (a >= 1000) return Math.round(n).toLocaleString("en-US").replaceAll(",", " ");
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  if (a >= 1) return n.toFixed(2);
  if (a === 0) return "0";
  return n.toPrecision(2);
}

/** A ratio as `0.42×` (two significant digits below 0.1: `0.0034×`); `—` for NaN. */
export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return "—";
  if (r >= 100) return `${r.toFixed(0)}×`;
  if (r >= 10) return `${r.toFixed(1)}×`;
  if (r >= 0.1 || r === 0) return `${r.toFixed(2)}×`;
  return `${r.toPrecision(2)}×`;
}

/** A spread of ratios as `median× (min–max)`; the median alone when only one round. */
export function fmtRatioSpread(s: Spread): string {
  if (!Number.isFinite(s.median)) return "—";
  if (s.min === s.max) return fmtRatio(s.median);
  return `${fmtRatio(s.median)} (${fmtRatio(s.min).slice(0, -1)}–${fmtRatio(s.max)})`;
}

/** A spread of plain numbers as `median (min–max)`. */
export function fmtSpread(s: Spread): string {
  if (!Number.isFinite(s.median)) return "—";
  if (s.min === s.max) return fmt(s.median);
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
}

/** Bytes as MiB with one decimal; `—` for NaN. */
export function fmtMiB(bytes: number): string {
  if (!Number.isFinite(bytes)) return "—";
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

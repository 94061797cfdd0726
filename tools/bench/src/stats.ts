/** Summary of one number measured once per round: the spread the tables print. */
export interface Spread {
  /** Smallest value over the rounds. */
  readonly min: number;
  /** Median over the rounds (mean of the middle two for an even count). */
  readonly median: number;
  /** Largest value over the rounds. */
  readonly max: number;
}

/**
 * The `p`-th percentile (0–100) of `values` by the nearest-rank method on a sorted copy:
 * the smallest value with at least `p`% of the values at or below it. `NaN` for no values.
 *
 * @example
 * percentile([5, 1, 3, 2, 4], 50); // 3
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be 0..100, got ${p}`);
  const n = values.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  return sorted[rank - 1] as number;
}

/** Percentiles of an already sorted array (no copy): nearest rank, as {@link percentile}. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  return sorted[rank - 1] as number;
}

/** Min / median / max of the finite values in `values`; all `NaN` when there are none. */
export function spread(values: readonly number[]): Spread {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN };
  const mid = v.length >> 1;
  const median =
    v.length % 2 === 1 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
  return { min: v[0] as number, median, max: v[v.length - 1] as number };
}

/**
 * Arithmetic mean of the finite values (`NaN` for none): next to the median of a few paired
 * ratios, the figure that moves with every round rather than the middle one alone.
 */
export function mean(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length === 0 ? Number.NaN : v.reduce((a, b) => a + b, 0) / v.length;
}

/** Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (index = df − 1). */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145,
  2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048,
  2.045, 2.042,
];

/** A mean with its 95 % confidence interval. */
export interface MeanInterval {
  readonly mean: number;
  readonly low: number;
  readonly high: number;
}

/**
 * The mean of the finite values with its 95 % confidence interval (Student's t; beyond 30
 * degrees of freedom the normal quantile 1.96). For a few paired ratios, an interval that
 * contains 1 says the rounds did not show a difference. `NaN` bounds for fewer than two values.
 *
 * @example
 * meanInterval([1, 2, 3, 4, 5]); // { mean: 3, low: ≈1.037, high: ≈4.963 }
 */
export function meanInterval(values: readonly number[]): MeanInterval {
  const v = values.filter((x) => Number.isFinite(x));
  const m = mean(v);
  if (v.length < 2) return { mean: m, low: Number.NaN, high: Number.NaN };
  const variance = v.reduce((a, x) => a + (x - m) ** 2, 0) / (v.length - 1);
  const t = T95[v.length - 2] ?? 1.96;
  const half = t * Math.sqrt(variance / v.length);
  return { mean: m, low: m - half, high: m + half };
}

/** `a / b`, or `NaN` when either is missing, not finite, or `b` is 0. */
export function ratio(a: number | undefined, b: number | undefined): number {
  if (a === undefined || b === undefined) return Number.NaN;
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return Number.NaN;
  return a / b;
}

/**
 * Paired ratios: `a[i] / b[i]` for each round `i` measured in both (subject and baseline
 * measured in the same round, so drift of the machine affects both). Rounds missing on
 * either side are skipped.
 */
export function pairedRatios(
  a: readonly (number | undefined)[],
  b: readonly (number | undefined)[],
): number[] {
  const out: number[] = [];
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const r = ratio(a[i], b[i]);
    if (Number.isFinite(r)) out.push(r);
  }
  return out;
}

/** {@link pairedRatios} summarized as a {@link Spread}. */
export function pairedRatio(
  a: readonly (number | undefined)[],
  b: readonly (number | undefined)[],
): Spread {
  return spread(pairedRatios(a, b));
}

/**
 * A deterministic permutation of `0..n-1` (Fisher–Yates driven by xorshift32 from `seed`):
 * the order subjects run in during round `seed`. Rotating one fixed order keeps every subject
 * right after the same neighbour in every round, so a neighbour's after-effects (a server still
 * flushing, say) would always land on the same subject; a fresh order per round spreads them.
 *
 * @example
 * permutation(4, 0); // [0, 1, 2, 3]: round 0 keeps the declared order
 */
export function permutation(n: number, seed: number): number[] {
  const out = Array.from({ length: n }, (_, i) => i);
  if (seed === 0) return out;
  let x = (seed * 0x9e3779b1) >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    const j = x % (i + 1);
    const t = out[i] as number;
    out[i] = out[j] as number;
    out[j] = t;
  }
  return out;
}

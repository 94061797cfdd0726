import type { MutationContext } from "./mutation-context.js";

/**
 * Published to subscribers when a mutation changed more keys than the fan-out cap
 * (`ODGM_MAX_BATCH_TRIGGER_FANOUT`): only the first `emitted` keys were evaluated for
 * triggers.
 */
export interface TruncationSummary {
  /** The object id of the mutation. */
  readonly objectId: string;
  /** The class id of the mutation. */
  readonly clsId: string;
  /** The partition id of the mutation. */
  readonly partitionId: number;
  /** The object version after the mutation. */
  readonly versionAfter: bigint;
  /** How many keys the mutation changed. */
  readonly totalChanged: number;
  /** How many keys were evaluated for triggers (the cap). */
  readonly emitted: number;
  /** How many keys were skipped (`totalChanged - emitted`). */
  readonly skipped: number;
  /** The first skipped keys, at most `ODGM_EVENT_SUMMARY_KEY_SAMPLE` of them. */
  readonly sampleSkippedKeys: readonly string[];
}

/**
 * Applies the fan-out cap to one mutation: returns `undefined` when `ctx.changed.length <= cap`
 * (everything is evaluated), else the {@link TruncationSummary}. Pure.
 *
 * @example
 * ```ts
 * const summary = truncationOf(ctx, 256, 32);
 * const matches = collectTriggers(ctx, ctx.eventConfig, summary ? summary.emitted : undefined);
 * ```
 */
export function truncationOf(
  ctx: MutationContext,
  cap: number,
  sampleSize: number,
): TruncationSummary | undefined {
  const total = ctx.changed.length;
  if (total <= cap) return undefined;
  const sampleEnd = Math.min(total, cap + sampleSize);
  const sampleSkippedKeys: string[] = [];
  for (let i = cap; i < sampleEnd; i++)
    sampleSkippedKeys.push((ctx.changed[i] as { key: string }).key);
  return {
    objectId: ctx.objectId,
    clsId: ctx.clsId,
    partitionId: ctx.partitionId,
    versionAfter: ctx.versionAfter,
    totalChanged: total,
    emitted: cap,
    skipped: total - cap,
    sampleSkippedKeys,
  };
}

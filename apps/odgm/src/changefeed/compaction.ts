// Background retention of the change logs: every interval, each local shard's log drops all
// records beyond ODGM_CHANGEFEED_RETENTION_RECORDS or older than ODGM_CHANGEFEED_RETENTION_MS
// (one range deletion, however many), except those at-least-once trigger delivery has not
// finished. Each replica compacts its own
// copy; revisions stay the same everywhere.
import type { ChangeRetention } from "@oprc/entry-store";
import type { Logger } from "pino";
import type { OdgmMetrics } from "../observability/metrics.js";
import type { ShardManager } from "../shards/shard-manager.js";

/** Options of {@link startChangeLogCompaction}. */
export interface ChangeLogCompactionOptions {
  readonly shards: ShardManager;
  readonly retention: ChangeRetention;
  readonly intervalMs: number;
  readonly metrics: OdgmMetrics;
  readonly logger: Logger;
}

/** Starts compacting; the returned function stops it and waits for a run in progress. */
export function startChangeLogCompaction(o: ChangeLogCompactionOptions): () => Promise<void> {
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = async (): Promise<void> => {
    for (const shard of o.shards.all()) {
      if (stopped) return;
      const log = shard.store.changes;
      if (log === undefined) continue;
      try {
        // Records at-least-once delivery has not finished stay, whatever their age.
        const removed = await log.compact(
          shard.delivery === undefined
            ? o.retention
            : { ...o.retention, holdFrom: shard.delivery.holdFrom },
        );
        if (removed > 0) o.metrics.changefeedCompacted.inc({ collection: shard.cls }, removed);
      } catch (err) {
        o.logger.warn(
          { err, collection: shard.cls, partition: shard.partition },
          "change-log compaction failed",
        );
      }
    }
  };
  const timer = setInterval(() => {
    if (running === undefined) running = run().finally(() => (running = undefined));
  }, o.intervalMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}

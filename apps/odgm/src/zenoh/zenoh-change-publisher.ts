// Change events on Zenoh: every committed per-entry change a shard's event dispatcher
// accepts is published, in the dispatcher's order, on `…/values/<key>/change` and on the
// object's `…/change`, as an `EventInfo` (the trigger payload's event description).
import { create, toBinary } from "@bufbuild/protobuf";
import { Encoding, type Session } from "@eclipse-zenoh/zenoh-ts";
import type { EventSubscription, MutationEvent } from "@oprc/event-v2";
import { EventInfoSchema, EventType } from "@oprc/grpc-api";
import { parseCanonicalU64 } from "@oprc/oprc-id";
import type { Logger } from "pino";
import type { OdgmMetrics } from "../observability/metrics.js";
import type { Shard } from "../shards/shard-manager.js";
import { type ObjectAddress, objectKey, valueKey } from "./zenoh-keys.js";

/** Options of {@link createZenohChangePublisher}. */
export interface ZenohChangePublisherOptions {
  /** The open session, `undefined` while Zenoh is down (events are then not published). */
  readonly session: () => Session | undefined;
  readonly metrics: OdgmMetrics;
  readonly logger: Logger;
}

/** Publishes the change events of the shards it is given. */
export interface ZenohChangePublisher {
  /** Starts publishing `shard`'s events (idempotent per shard). */
  watch(shard: Shard): void;
  /** Stops every subscription. */
  close(): void;
}

const ACTION_TYPE = {
  create: EventType.DATA_CREATE,
  update: EventType.DATA_UPDATE,
  delete: EventType.DATA_DELETE,
} as const;

/** The `EventInfo` messages of one mutation, with the keys to publish each on. */
export function changeMessages(
  event: MutationEvent,
): { keys: [string, string]; payload: Uint8Array }[] {
  const { ctx } = event;
  const numeric = parseCanonicalU64(ctx.objectId);
  const object: ObjectAddress = {
    cls: ctx.clsId,
    partition: ctx.partitionId,
    id: numeric === undefined ? { str: ctx.objectId } : { numeric },
  };
  return ctx.changed.map((c) => {
    const info = create(EventInfoSchema, {
      sourceClsId: ctx.clsId,
      sourcePartitionId: ctx.partitionId,
      sourceObjectId: numeric ?? 0n,
      sourceObjectIdStr: ctx.objectId,
      eventType: ACTION_TYPE[c.action],
      ...(c.numeric ? { key: Number(c.key) } : { keyStr: c.key }),
      timestamp: BigInt(event.timestampMs),
      context: {
        seq: String(event.seq),
        version_before: String(ctx.versionBefore),
        version_after: String(ctx.versionAfter),
        ...(c.numeric ? {} : { key_str: c.key }),
      },
    });
    return {
      keys: [`${valueKey(object, c.key)}/change`, `${objectKey(object)}/change`],
      payload: toBinary(EventInfoSchema, info),
    };
  });
}

/** Creates the change-event publisher. */
export function createZenohChangePublisher(o: ZenohChangePublisherOptions): ZenohChangePublisher {
  const subscriptions = new Map<Shard, EventSubscription>();

  const pump = async (shard: Shard, sub: EventSubscription) => {
    for await (const { event, lost } of sub) {
      if (lost > 0)
        o.logger.warn(
          { collection: shard.cls, partition: shard.partition, lost },
          "zenoh change events lost",
        );
      if (event.kind !== "mutation") continue;
      const session = o.session();
      if (session === undefined) continue;
      try {
        for (const m of changeMessages(event)) {
          for (const key of m.keys)
            await session.put(key, m.payload, { encoding: Encoding.APPLICATION_PROTOBUF });
        }
        o.metrics.zenohEventsPublished.inc({ collection: shard.cls }, event.ctx.changed.length);
      } catch (err) {
        o.logger.warn({ err, collection: shard.cls }, "could not publish a change event");
      }
    }
  };

  return {
    watch(shard) {
      if (shard.events === undefined || subscriptions.has(shard)) return;
      let sub: EventSubscription;
      try {
        sub = shard.events.subscribe();
      } catch {
        return; // dispatcher already closed
      }
      subscriptions.set(shard, sub);
      void pump(shard, sub).catch((err: unknown) =>
        o.logger.error({ err }, "zenoh change publisher stopped"),
      );
    },
    close() {
      for (const sub of subscriptions.values()) sub.close();
      subscriptions.clear();
    },
  };
}

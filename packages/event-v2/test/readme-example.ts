import { create } from "@bufbuild/protobuf";
import {
  createEventDispatcher,
  eventConfigFromEnv,
  mutationContextFromResult,
  type TriggerSink,
} from "@oprc/event-v2";
import { ObjectEventSchema } from "@oprc/grpc-api";

// The object's trigger configuration: call `audit` when entry "email" is updated.
const eventConfig = create(ObjectEventSchema, {
  dataTriggerStr: {
    email: { onUpdate: [{ clsId: "audit", partitionId: 0, fnId: "record-change" }] },
  },
});

// The service's sink: here it just prints what it would invoke.
const sink: TriggerSink = {
  dispatch(invocation) {
    console.log(`invoke ${invocation.request.clsId}/${invocation.request.fnId}`, invocation.kind);
  },
};

const dispatcher = createEventDispatcher({ ...eventConfigFromEnv(process.env), sink });
const feed = dispatcher.subscribe();

// After the entry store committed a write, build the context and enqueue it (never blocks).
const ctx = mutationContextFromResult(
  {
    versionBefore: 1n,
    versionAfter: 2n,
    changed: [{ key: "email", numeric: false, action: "update" }],
  },
  { objectId: "user-1", clsId: "users", partitionId: 0, eventConfig },
);
if (ctx) console.log(dispatcher.tryEnqueue(ctx));

const item = await feed.next();
if (item?.event.kind === "mutation") console.log("event", item.event.seq, item.event.ctx.changed);

console.log(await dispatcher.close());
console.log(dispatcher.metrics().emittedUpdate);

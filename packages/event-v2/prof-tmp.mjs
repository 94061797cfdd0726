import { create } from "@bufbuild/protobuf";
import { EventType, ObjectEventSchema } from "@oprc/grpc-api/messages";
import { changedKey, mutationContextFromResult, createTriggerPayload, encodeTriggerPayload } from "@oprc/event-v2";
const numericKeys = Array.from({ length: 64 }, (_, i) => String(1000 + i * 37));
const stringKeys = Array.from({ length: 64 }, (_, i) => `field-${i}.name`);
const target = { objectId: "user-12345", clsId: "users", partitionId: 3 };
const payloads = stringKeys.map((k) => { const ctx = mutationContextFromResult({versionBefore:4n,versionAfter:5n,changed:[changedKey(k,"create")]}, target);
  return createTriggerPayload({ source: ctx, eventType: EventType.DATA_CREATE, changed: ctx.changed[0], objectVersion: ctx.versionAfter, timestampMs: 1_700_000_000_000 }); });
const keep = new Array(64);
const which = process.argv[2];
const ops = {
  pb: (i) => encodeTriggerPayload(payloads[i], "protobuf"),
  json: (i) => encodeTriggerPayload(payloads[i], "json"),
  ctxn: (i) => mutationContextFromResult({versionBefore:4n,versionAfter:5n,changed:[changedKey(numericKeys[i],"create")]}, target),
  ctxs: (i) => mutationContextFromResult({versionBefore:4n,versionAfter:5n,changed:[changedKey(stringKeys[i],"create")]}, target),
  lit: (i) => ({objectId: target.objectId, clsId: target.clsId, partitionId: i, versionBefore: 4n, versionAfter: 5n, changed: [{ key: stringKeys[i], numeric: false, action: "create" }], eventConfig: undefined}),
};
for (const name of which.split(",")) {
  const f = ops[name];
  let best = Infinity;
  for (let r = 0; r < 7; r++) {
    const s = process.cpuUsage(); const N = 1 << 20;
    for (let i = 0; i < N; i++) keep[i & 63] = f(i & 63);
    const d = process.cpuUsage(s); best = Math.min(best, (d.user + d.system) * 1000 / N);
  }
  console.log(name, best.toFixed(1), "ns");
}

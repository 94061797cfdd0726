// Reading V8 CPU profiles (`node --cpu-prof`) of the odgm child: self time grouped by
// where the code lives, to say where a request's time goes.

/** The parts of a `.cpuprofile` this reads. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string };
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * The bucket a frame's self time is charged to: a workspace package (`@oprc/entry-store`),
 * an npm package (`@connectrpc/connect-node`), `node:` internals, or V8's pseudo-frames
 * (`(garbage collector)`, `(program)`, `(idle)`).
 */
export function frameBucket(url: string, functionName: string): string {
  if (url === "") {
    if (functionName.startsWith("(")) return functionName;
    return "(native)";
  }
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pnpm?.[1] !== undefined) return pnpm[1];
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (nm?.[1] !== undefined) return nm[1];
  const ws = /\/(packages|apps|tools)\/([^/]+)\//.exec(url);
  if (ws?.[2] !== undefined) return `@oprc/${ws[2]}`;
  if (url.startsWith("node:")) return "node: internals";
  return url;
}

/** Share of busy (non-idle) self time per bucket, largest first. */
export function profileShares(profile: CpuProfile): { bucket: string; share: number }[] {
  const bucketOf = new Map<number, string>();
  for (const n of profile.nodes) {
    bucketOf.set(n.id, frameBucket(n.callFrame.url, n.callFrame.functionName));
  }
  const time = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const bucket = bucketOf.get(profile.samples[i] as number) ?? "(unknown)";
    const dt = profile.timeDeltas[i] ?? 0;
    if (bucket === "(idle)") continue;
    time.set(bucket, (time.get(bucket) ?? 0) + dt);
    busy += dt;
  }
  return [...time]
    .map(([bucket, t]) => ({ bucket, share: busy > 0 ? t / busy : 0 }))
    .sort((a, b) => b.share - a.share);
}

/** The `limit` functions with the most busy self time: `name (bucket)` and share. */
export function topFunctions(
  profile: CpuProfile,
  limit: number,
): { fn: string; bucket: string; share: number }[] {
  const nodeInfo = new Map<number, { fn: string; bucket: string }>();
  for (const n of profile.nodes) {
    const { functionName, url } = n.callFrame;
    nodeInfo.set(n.id, {
      fn: functionName || "(anonymous)",
      bucket: frameBucket(url, functionName),
    });
  }
  const time = new Map<string, { fn: string; bucket: string; t: number }>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const info = nodeInfo.get(profile.samples[i] as number);
    if (info === undefined || info.bucket === "(idle)") continue;
    const dt = profile.timeDeltas[i] ?? 0;
    const key = `${info.bucket}\u0000${info.fn}`;
    const cur = time.get(key) ?? { ...info, t: 0 };
    cur.t += dt;
    time.set(key, cur);
    busy += dt;
  }
  return [...time.values()]
    .sort((a, b) => b.t - a.t)
    .slice(0, limit)
    .map(({ fn, bucket, t }) => ({ fn, bucket, share: busy > 0 ? t / busy : 0 }));
}

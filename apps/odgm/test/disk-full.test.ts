// A full disk, for real: a node's data directory on a 3 MB tmpfs. Writes that hit ENOSPC
// used to answer INTERNAL while /readyz stayed 200, stayed failed after space came back,
// and made shutdown fail. Now: UNAVAILABLE saying why, readiness and a metric saying the
// node needs a restart, reads still served, a clean exit, and after a restart with space
// every acknowledged write is there and writes work again.
// Needs `mount -t tmpfs` (root with CAP_SYS_ADMIN, as in CI); skipped, and says so, without.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, describe, expect, it } from "vitest";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";

const mountpoint = mkdtempSync(join(tmpdir(), "odgm-full-"));
let mounted = false;
try {
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", mountpoint], { stdio: "pipe" });
  mounted = true;
} catch (err) {
  console.warn(
    `disk-full test skipped: cannot mount a tmpfs (${(err as Error).message.split("\n")[0]})`,
  );
}
const procs: OdgmProcess[] = [];
afterAll(async () => {
  for (const p of procs)
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  if (mounted) execFileSync("umount", [mountpoint]);
  rmSync(mountpoint, { recursive: true, force: true });
});

describe.runIf(mounted)("a full disk", () => {
  it("refuses writes with UNAVAILABLE, is not ready, keeps reading, stops cleanly, and recovers after a restart with space", {
    timeout: 120_000,
  }, async () => {
    const env = { ODGM_DATA_DIR: join(mountpoint, "data") };
    const node = await startOdgmProcess(env);
    procs.push(node);
    const put = (url: string, id: number) =>
      fetch(`${url}/api/class/default/0/objects/o${id}/values/k`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        // Random bytes: compressible values would shrink into SST files and never fill it.
        body: Uint8Array.of(id, ...randomBytes(99_999)),
      });
    const acked: number[] = [];
    let refused: Response | undefined;
    for (let id = 1; id <= 60 && refused === undefined; id++) {
      const res = await put(node.url, id);
      if (res.status === 204) acked.push(id);
      else refused = res;
    }
    expect(refused?.status, node.output().slice(-2000)).toBe(503);
    expect(acked.length).toBeGreaterThan(3);
    // gRPC says what happened and what to do.
    const data = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
    const err = await data
      .setValue({
        clsId: "default",
        objectIdStr: "x",
        keyStr: "k",
        value: { data: new Uint8Array(10) },
      })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unavailable);
    expect(err?.rawMessage).toMatch(/No space left on device.*restart the node/);
    expect((await fetch(`${node.url}/readyz`)).status).toBe(503);
    expect(await (await fetch(`${node.url}/metrics`)).text()).toMatch(/^odgm_storage_writable 0$/m);
    expect((await fetch(`${node.url}/api/class/default/0/objects/o1/values/k`)).status).toBe(200);
    node.child.kill("SIGTERM");
    expect(await node.exited).toBe(0);

    // Space comes back; the node is restarted.
    execFileSync("mount", ["-o", "remount,size=64m", mountpoint]);
    const again = await startOdgmProcess(env);
    procs.push(again);
    for (const id of acked) {
      const r = await fetch(`${again.url}/api/class/default/0/objects/o${id}/values/k`, {
        headers: { accept: "application/octet-stream" },
      });
      expect(r.status, `o${id}`).toBe(200);
      expect(new Uint8Array(await r.arrayBuffer())[0]).toBe(id);
    }
    expect((await put(again.url, 99)).status).toBe(204);
    expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });
});

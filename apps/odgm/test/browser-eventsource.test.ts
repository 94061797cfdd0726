// The change feed in a real browser: Debian's headless Chromium, driven by playwright-core,
// opens the SSE route with the browser's own EventSource and follows 40 writes across a
// restart of the node (same port), resuming with Last-Event-ID — every revision once, in
// order. `.ci/run` installs Chromium (Debian package `chromium`); a developer machine
// without it skips this file (ODGM_CHROMIUM names another binary), CI never does.
import { existsSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { freePorts } from "@oprc/test-config/ports";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode, testTempDir } from "./fixtures/temp-node.js";

const CHROMIUM = process.env.ODGM_CHROMIUM ?? "/usr/bin/chromium";
const present = existsSync(CHROMIUM);
const v = (s: string) => ({ data: new TextEncoder().encode(s) });

let browser: Browser | undefined;
beforeAll(async () => {
  if (!present && process.env.CI === undefined) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI needs --no-sandbox; the rest keep Chromium off the (closed) network.
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});
afterAll(async () => {
  await browser?.close();
});

interface Seen {
  id: string;
  revision: string;
  object: string;
}

describe.skipIf(!present && process.env.CI === undefined)("a browser's EventSource", () => {
  it("follows the change feed across a node restart without a gap or a duplicate", async () => {
    const dir = await testTempDir("odgm-browser-");
    const [port] = await freePorts(1);
    const env = {
      ODGM_COLLECTION: JSON.stringify([{ name: "c", partitionCount: 1 }]),
      ODGM_HTTP_PORT: String(port),
    };
    let node: TempNode = await startTempNode(env, dir);
    const page = await (browser as Browser).newPage();
    try {
      // Same origin as the feed: the page is the node's own /healthz.
      await page.goto(`${node.node.url}/healthz`);
      await page.evaluate(() => {
        const seen: { id: string; revision: string; object: string }[] = [];
        (globalThis as unknown as { seen: typeof seen }).seen = seen;
        const es = new EventSource("/api/class/c/0/changes?start_revision=1&progress_ms=100");
        es.addEventListener("change", (ev) => {
          const e = ev as MessageEvent;
          const r = JSON.parse(e.data) as { revision: string; objectIdStr: string };
          seen.push({ id: e.lastEventId, revision: r.revision, object: r.objectIdStr });
        });
      });
      const seen = (): Promise<Seen[]> =>
        page.evaluate(() => (globalThis as unknown as { seen: Seen[] }).seen);
      const until = async (n: number): Promise<Seen[]> => {
        let s = await seen();
        for (let i = 0; i < 300 && s.length < n; i++) {
          await new Promise((r) => setTimeout(r, 50));
          s = await seen();
        }
        return s;
      };
      const data = (n: TempNode) =>
        createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      for (let i = 0; i < 20; i++)
        await data(node).setValue({ clsId: "c", objectIdStr: `o${i}`, keyStr: "k", value: v("1") });
      expect(await until(20)).toHaveLength(20);
      await node.close();
      // Down long enough for the browser to try (and fail) to reconnect meanwhile.
      await new Promise((r) => setTimeout(r, 3_000));
      node = await startTempNode(env, dir);
      for (let i = 20; i < 40; i++)
        await data(node).setValue({ clsId: "c", objectId: BigInt(i), keyStr: "k", value: v("1") });
      const all = await until(40);
      expect(all.map((s) => s.revision)).toEqual(
        Array.from({ length: 40 }, (_, i) => String(i + 1)),
      );
      expect(all.every((s) => s.id === s.revision)).toBe(true);
      expect(all[0]?.object).toBe("o0");
      expect(all[39]?.object).toBe("39");
    } finally {
      await page.close();
      await node.close();
    }
  }, 120_000);
});

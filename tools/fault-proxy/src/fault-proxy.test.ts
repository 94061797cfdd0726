// Real sockets on loopback: forwarding, one-way and two-way cuts, delay, reset, heal.
import { createServer as createH2Server, connect as h2connect } from "node:http2";
import { type AddressInfo, connect, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createFaultProxy, type FaultProxy } from "./fault-proxy.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A TCP server that echoes with a prefix, standing for node `id`. */
async function echo(id: number): Promise<number> {
  const server: Server = createServer((s) => s.on("data", (d) => s.write(`${id}:${d}`)));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

/** Sends `msg` through the proxy port and collects what comes back within `ms`. */
async function roundTrip(port: number, msg: string, ms = 150): Promise<string> {
  const s = connect(port, "127.0.0.1");
  let got = "";
  s.on("data", (d) => {
    got += d.toString();
  });
  s.on("error", () => undefined);
  await new Promise<void>((r) => s.once("connect", r).once("close", r));
  s.write(msg);
  await new Promise((r) => setTimeout(r, ms));
  s.destroy();
  return got;
}

async function proxyOf(n: number): Promise<FaultProxy> {
  const nodes = [];
  for (let id = 1; id <= n; id++) nodes.push({ id, port: await echo(id) });
  const proxy = await createFaultProxy({ nodes });
  cleanup.push(() => proxy.close());
  return proxy;
}

describe("fault proxy", () => {
  it("forwards bytes both ways on every pair", async () => {
    const p = await proxyOf(3);
    expect(await roundTrip(p.portFor(1, 2), "hi")).toBe("2:hi");
    expect(await roundTrip(p.portFor(3, 1), "yo")).toBe("1:yo");
    expect(p.stats().bytesForwarded).toBeGreaterThan(0);
  });

  it("a one-way cut drops what one node sends, not what the other sends", async () => {
    const p = await proxyOf(2);
    p.cut(1, 2);
    // 1 → 2 requests are dropped: no answer.
    expect(await roundTrip(p.portFor(1, 2), "a")).toBe("");
    // 2 → 1 requests arrive; 1's answers (bytes from 1 to 2) are dropped.
    expect(await roundTrip(p.portFor(2, 1), "b")).toBe("");
    p.heal();
    p.cut(2, 1);
    // Now 1's requests reach 2, but 2's answers do not come back.
    expect(await roundTrip(p.portFor(1, 2), "c")).toBe("");
    expect(p.stats().bytesDropped).toBeGreaterThan(0);
    p.heal();
    expect(await roundTrip(p.portFor(1, 2), "d")).toBe("2:d");
  });

  it("partitions and isolations block both ways until healed", async () => {
    const p = await proxyOf(3);
    p.partition([1], [2, 3]);
    expect(await roundTrip(p.portFor(1, 3), "x")).toBe("");
    expect(await roundTrip(p.portFor(3, 1), "x")).toBe("");
    expect(await roundTrip(p.portFor(2, 3), "x")).toBe("3:x");
    expect(p.status()).toMatchObject({ "1->2": "cut", "3->1": "cut" });
    p.heal();
    p.isolate(2);
    expect(await roundTrip(p.portFor(1, 2), "y")).toBe("");
    expect(await roundTrip(p.portFor(1, 3), "y")).toBe("3:y");
    p.heal();
    expect(await roundTrip(p.portFor(3, 2), "z")).toBe("2:z");
  });

  it("delays in order, and reset refuses connections until healed", async () => {
    const p = await proxyOf(2);
    p.delay(1, 2, 30);
    expect(await roundTrip(p.portFor(1, 2), "slow", 400)).toBe("2:slow");
    p.heal();
    p.reset(1, 2);
    expect(await roundTrip(p.portFor(1, 2), "r")).toBe("");
    p.heal();
    expect(await roundTrip(p.portFor(1, 2), "r")).toBe("2:r");
  });

  it("an HTTP/2 request survives a delay, and a cut connection is reset on heal", async () => {
    const h2 = createH2Server((_req, res) => res.end("pong"));
    await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
    cleanup.push(() => new Promise((r) => h2.close(r)));
    const proxy = await createFaultProxy({
      nodes: [
        { id: 1, port: await echo(1) },
        { id: 2, port: (h2.address() as AddressInfo).port },
      ],
    });
    cleanup.push(() => proxy.close());
    const session = h2connect(`http://127.0.0.1:${proxy.portFor(1, 2)}`);
    session.on("error", () => undefined);
    cleanup.push(async () => session.destroy());
    const get = () =>
      new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/" });
        let body = "";
        req.on("data", (d) => {
          body += d;
        });
        req.on("end", () => resolve(body));
        req.on("error", reject);
        req.end();
      });
    proxy.delay(1, 2, 20, { both: true });
    expect(await get()).toBe("pong");
    proxy.cut(1, 2);
    const lost = get().catch(() => "reset");
    await new Promise((r) => setTimeout(r, 100));
    proxy.heal();
    expect(await lost).not.toBe("pong");
    expect(session.destroyed || session.closed).toBe(true);
  });
});

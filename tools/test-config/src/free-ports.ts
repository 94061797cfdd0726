// Loopback ports for servers a test or benchmark starts later (cluster members must know
// each other's ports up front), taken below the kernel's ephemeral range.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * The first port of the kernel's ephemeral range (what `connect` picks source ports from);
 * 32768 when it cannot be read.
 */
function ephemeralFloor(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/);
    const n = Number(low);
    return Number.isInteger(n) && n > 2048 ? n : 32768;
  } catch {
    return 32768;
  }
}

/** Whether `port` can be bound on loopback right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/**
 * Ports free right now, for servers started later. They are taken below the kernel's
 * ephemeral range: a port from that range (a listen on port 0) can be handed out meanwhile
 * as the source port of an outgoing connection (a node retrying a peer that is not up
 * yet), and the server then fails with EADDRINUSE.
 */
export async function freePorts(n: number): Promise<number[]> {
  const ceiling = ephemeralFloor();
  const floor = Math.max(1024, ceiling - 12_000);
  const ports = new Set<number>();
  for (let attempt = 0; ports.size < n && attempt < 1000; attempt++) {
    const port = floor + Math.floor(Math.random() * (ceiling - floor));
    if (!ports.has(port) && (await bindable(port))) ports.add(port);
  }
  if (ports.size < n) throw new Error(`found only ${ports.size} of ${n} free ports`);
  return [...ports];
}

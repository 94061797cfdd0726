import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { freePorts } from "@oprc/test-config/ports";
import { describe, expect, it } from "vitest";
import { freePort } from "./redis.js";

const ephemeralLow = (): number =>
  Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

const bind = (port: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(port, "127.0.0.1", () => s.close(() => resolve()));
  });

describe("free ports", () => {
  it("are distinct, below the kernel's ephemeral range, and bindable", async () => {
    const ports = await freePorts(8);
    expect(new Set(ports).size).toBe(8);
    const low = ephemeralLow();
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(1024);
      expect(p).toBeLessThan(low);
      await bind(p);
    }
    const one = await freePort();
    expect(one).toBeLessThan(low);
    await bind(one);
  });
});

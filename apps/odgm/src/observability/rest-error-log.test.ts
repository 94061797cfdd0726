import { Code, ConnectError } from "@connectrpc/connect";
import { GatewayError } from "@oprc/rest-gateway";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { restErrorLogger } from "./rest-error-log.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { lines, log: restErrorLogger(logger) };
}

describe("restErrorLogger", () => {
  it("logs a 500 as an error with its stack", () => {
    const { lines, log } = capture();
    log(GatewayError.from(new Error("boom")), new Request("http://n/api/class/c/0/objects/o"));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe(50);
    expect(JSON.stringify(lines[0]?.err)).toContain("boom");
  });

  it("logs a 503 as one warning line with the upstream message and no stack", () => {
    const { lines, log } = capture();
    const upstream = new ConnectError("could not forward to the leader (node 3)", Code.Unavailable);
    log(
      GatewayError.from(upstream),
      new Request("http://n/api/class/c/0/objects/o/values/k?x=1", { method: "PUT" }),
    );
    expect(lines).toHaveLength(1);
    const line = lines[0] as Record<string, unknown>;
    expect(line.level).toBe(40);
    expect(line).toMatchObject({
      code: "unavailable",
      method: "PUT",
      path: "/api/class/c/0/objects/o/values/k",
      cause: "[unavailable] could not forward to the leader (node 3)",
    });
    expect(JSON.stringify(line)).not.toContain("at ");
  });
});

import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { EXIT_CODES, runCli } from "./cli.js";

function io() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return { stdout, stderr, out: () => out, err: () => err };
}

const base = ["--collection=orders", "--partition=0"];

describe("odgm-backfill command line", () => {
  it("--help documents every flag and the exit codes", async () => {
    const s = io();
    expect(await runCli(["--help"], s)).toBe(EXIT_CODES.ok);
    for (const flag of [
      "--mode",
      "--collection",
      "--partition",
      "--data-dir",
      "--endpoint",
      "--parallel",
      "--batch-size",
      "--dry-run",
      "--verify",
      "--throttle",
      "--checkpoint ",
      "--checkpoint-interval",
      "--sync-each-object",
      "--json",
      "--no-progress",
      "Exit codes",
    ]) {
      expect(s.out()).toContain(flag);
    }
  });

  it.each([
    [["--data-dir=/x"], "required option '--collection <name>' not specified"],
    [["--collection=orders", "--data-dir=/x"], "required option '--partition <n>' not specified"],
    [[...base], "give exactly one of --data-dir (offline) and --endpoint (online)"],
    [[...base, "--data-dir=/x", "--endpoint=http://h:1"], "cannot be used with option"],
    [[...base, "--data-dir=/x", "--bogus"], "unknown option '--bogus'"],
    [[...base, "--data-dir=/x", "extra"], "too many arguments"],
    [[...base, "--data-dir=/x", "--parallel=0"], "expected 1..1024, got 0"],
    [[...base, "--data-dir=/x", "--parallel=two"], 'expected an integer, got "two"'],
    [["--collection=orders", "--partition=-1", "--data-dir=/x"], 'expected an integer, got "-1"'],
    [
      [...base, "--data-dir=/x", "--throttle=fast"],
      "expected a positive number of objects per second",
    ],
    [[...base, "--data-dir=/x", "--mode=blobs"], "Allowed choices are entries"],
    [[...base, "--data-dir=/x", "--checkpoint=/tmp/c.json"], "cannot be used with option"],
    [[...base, "--data-dir=/x", "--batch-size=10"], "--batch-size is for online runs"],
    [[...base, "--data-dir=/x", "--dry-run", "--verify"], "cannot be used with option '--dry-run'"],
    [
      [...base, "--endpoint=http://h:1", "--sync-each-object"],
      "--sync-each-object is for offline runs",
    ],
  ])("%j exits 2 with a clear message", async (args, message) => {
    const s = io();
    expect(await runCli(args, s)).toBe(EXIT_CODES.usage);
    expect(s.err()).toContain(message);
  });

  it("an --endpoint that is not a URL is a usage error", async () => {
    const s = io();
    expect(await runCli([...base, "--endpoint=not a url", "--no-progress"], s)).toBe(
      EXIT_CODES.usage,
    );
    expect(s.err()).toContain("[invalid_argument] --endpoint not a url is not a URL");
  });

  it("a missing data directory exits 3 and --json reports the error", async () => {
    const s = io();
    const code = await runCli(
      [...base, "--data-dir=/nonexistent/odgm", "--json", "--no-progress"],
      s,
    );
    expect(code).toBe(EXIT_CODES.failed);
    expect(JSON.parse(s.out())).toEqual({
      ok: false,
      error: {
        code: "not_found",
        message: "[not_found] data directory /nonexistent/odgm does not exist",
      },
    });
  });
});

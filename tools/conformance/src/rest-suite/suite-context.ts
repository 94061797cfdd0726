import { expect } from "vitest";
import type { RestSend, RestSuiteOptions } from "../rest-suite.js";

const encoder = new TextEncoder();
/** UTF-8 bytes of `text`. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}
/** The body limit a target under test must enforce. */
export const BODY_LIMIT: number = 64 * 1024;
/** A metric name a target's `/metrics` must contain. */
export const REST_SUITE_METRIC = "odgm_";

/** What every part of the suite works with. */
export interface SuiteContext {
  /** Sends to the target started for this suite. */
  readonly send: RestSend;
  /** A fresh id with prefix `p`, unique in this run. */
  readonly uid: (p?: string) => string;
  /** The collection the cases write to, and its partition 0's path. */
  readonly cls: string;
  readonly base: string;
  /** A JSON request body. */
  readonly json: (value: unknown) => { body: string; headers: Record<string, string> };
  /** Asserts a JSON error answer (status, code, message containing `contains`); returns its error. */
  readonly expectError: (
    res: Response,
    status: number,
    code?: string,
    contains?: string,
  ) => Promise<{ code: string; message: string }>;
  /** Asserts the target still answers /healthz. */
  readonly healthy: () => Promise<void>;
  readonly options: RestSuiteOptions;
}

export function createSuiteContext(
  current: () => RestSend,
  options: RestSuiteOptions,
): SuiteContext {
  let seq = 0;
  const run = Math.random().toString(36).slice(2, 8);
  const cls = "suite";
  const send: RestSend = (method, path, init) => current()(method, path, init);
  return {
    send,
    uid: (p = "obj") => `${p}-${run}-${++seq}`,
    cls,
    base: `/api/class/${cls}/0`,
    json: (value) => ({
      body: JSON.stringify(value),
      headers: { "content-type": "application/json" },
    }),
    async expectError(res, status, code, contains) {
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(typeof body.error.message).toBe("string");
      expect(body.error.message.length).toBeGreaterThan(0);
      // At most one `[code] ` prefix: wrapping layers must not stack theirs.
      expect(body.error.message).not.toMatch(/^(\[[a-z_]+\] ){2}/);
      if (code !== undefined) expect(body.error.code).toBe(code);
      if (contains !== undefined) expect(body.error.message).toContain(contains);
      return body.error;
    },
    async healthy() {
      const res = await send("GET", "/healthz");
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    },
    options,
  };
}

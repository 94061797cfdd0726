// Bearer tokens on Zenoh: with authentication on, a query or a put/delete sample carries
// `Bearer <token>` as its attachment and is checked by the same table as a gRPC call
// (through the same interceptor); without one it is refused like an anonymous call.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Config, Duration, open, type Session } from "@eclipse-zenoh/zenoh-ts";
import { CapabilitiesResponseSchema, ValDataSchema, ValueResponseSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { type RouterProcess, startRouter } from "./fixtures/zenoh-router.js";

const WRITER = "zenoh-writer-token-0123456789";
const READER = "zenoh-reader-token-0123456789";
const P = "oprc/default/0";
let router: RouterProcess;
let node: OdgmProcess;
let session: Session;

beforeAll(async () => {
  router = await startRouter(0);
  node = await startOdgmProcess({
    ODGM_STORAGE: "memory",
    ODGM_ZENOH_ENDPOINT: `ws/127.0.0.1:${router.port}`,
    ODGM_ZENOH_RETRY_MS: "200",
    ODGM_AUTH_TOKENS: `write ${WRITER}; read ${READER}`,
  });
  // /readyz stays open with authentication on.
  while (
    ((await (await fetch(`${node.url}/readyz`)).json()) as { zenoh?: string }).zenoh !== "up"
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
  session = await open(new Config(`ws/127.0.0.1:${router.port}`, 10_000));
});
afterAll(async () => {
  await session?.close();
  node?.child.kill("SIGTERM");
  await node?.exited;
  router?.child.kill("SIGTERM");
  await router?.exited;
});

type Answer = { ok: Uint8Array } | { err: string };

/** One query's one reply: its payload, or its error code. */
async function query(key: string, token?: string, payload?: Uint8Array): Promise<Answer> {
  const receiver = await session.get(key, {
    ...(payload === undefined ? {} : { payload }),
    ...(token === undefined ? {} : { attachment: `Bearer ${token}` }),
    timeout: Duration.milliseconds.of(20_000),
  });
  const answers: Answer[] = [];
  for await (const reply of receiver ?? []) {
    const r = reply.result();
    if ("kind" in r) answers.push({ ok: r.payload().toBytes() });
    else answers.push({ err: (JSON.parse(r.payload().toString()) as { code: string }).code });
  }
  expect(answers).toHaveLength(1);
  return answers[0] as Answer;
}

const val = (s: string) =>
  toBinary(ValDataSchema, create(ValDataSchema, { data: new TextEncoder().encode(s) }));

describe("Zenoh with authentication", () => {
  it("queries: no or unknown token unauthenticated, read-only permission_denied", async () => {
    const key = `${P}/sobjects/q/values/k`;
    expect(await query(`${key}/set`, undefined, val("x"))).toEqual({ err: "unauthenticated" });
    expect(await query(`${key}/set`, "unknown-token-0123456789", val("x"))).toEqual({
      err: "unauthenticated",
    });
    expect(await query(`${key}/set`, READER, val("x"))).toEqual({ err: "permission_denied" });
    expect(await query(`${key}/set`, WRITER, val("x"))).toEqual({ ok: new Uint8Array(0) });
    expect(await query(key)).toEqual({ err: "unauthenticated" });
    const read = await query(key, READER);
    expect("ok" in read && fromBinary(ValueResponseSchema, read.ok).value?.data).toEqual(
      new TextEncoder().encode("x"),
    );
    // The capabilities queryable too.
    expect(await query("odgm/nodes/1/capabilities")).toEqual({ err: "unauthenticated" });
    const caps = await query("odgm/nodes/1/capabilities", READER);
    expect("ok" in caps && fromBinary(CapabilitiesResponseSchema, caps.ok).stringIds).toBe(true);
  });

  it("samples: a put without a write token is refused, one with it applied", async () => {
    const key = `${P}/sobjects/s/values/k`;
    await session.put(key, val("anonymous"));
    await session.put(key, val("reader"), { attachment: `Bearer ${READER}` });
    await session.put(key, val("writer"), { attachment: `Bearer ${WRITER}` });
    // Only the writer's put may land.
    const storedValue = async () => {
      const got = await query(key, READER);
      return "ok" in got ? fromBinary(ValueResponseSchema, got.ok).value?.data : undefined;
    };
    let value = await storedValue();
    while (value === undefined) {
      await new Promise((r) => setTimeout(r, 100));
      value = await storedValue();
    }
    expect(new TextDecoder().decode(value)).toBe("writer");
    // Both refusals are counted (samples are handled concurrently: wait for them).
    const refused = async () => {
      const text = await (
        await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${READER}` } })
      ).text();
      return [
        /odgm_zenoh_requests_total\{kind="put",outcome="unauthenticated"\} 1/.test(text),
        /odgm_zenoh_requests_total\{kind="put",outcome="permission_denied"\} 1/.test(text),
      ];
    };
    while (!(await refused()).every(Boolean)) await new Promise((r) => setTimeout(r, 100));
    expect(await refused()).toEqual([true, true]);
  });
});

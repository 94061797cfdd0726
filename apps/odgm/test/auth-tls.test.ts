// Bearer tokens over TLS, as real clients send them: curl with --cacert and an
// Authorization header (HTTP/1.1 and HTTP/2), grpcio with SSL channel credentials composed
// with access-token call credentials, and connect-node over TLS.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, SetKeyRequestSchema } from "@oprc/grpc-api";
import { findPythonWithGrpc, skipPythonInterop } from "@oprc/grpc-api/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { tempDir } from "./fixtures/temp-node.js";

const run = promisify(execFile);
const fixture = (name: string): string =>
  fileURLToPath(new URL(`./fixtures/tls/${name}`, import.meta.url));
const WRITER = "tls-writer-token-0123456789";
const READER = "tls-reader-token-0123456789";
const EXPIRED = "tls-expired-token-0123456789";
let node: OdgmProcess;
let dir: string | undefined;
beforeAll(async () => {
  dir = await tempDir("odgm-auth-tls-");
  await writeFile(
    `${dir}/tokens`,
    `write ${WRITER}\nread ${READER}\nwrite ${EXPIRED} expires=2001-01-01\n`,
  );
  node = await startOdgmProcess({
    ODGM_DATA_DIR: `${dir}/data`,
    ODGM_TLS_CERT: fixture("cert-a.pem"),
    ODGM_TLS_KEY: fixture("key-a.pem"),
    ODGM_AUTH_TOKENS_FILE: `${dir}/tokens`,
  });
});
afterAll(async () => {
  if (node !== undefined && node.child.exitCode === null) node.child.kill("SIGTERM");
  await node?.exited;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("bearer tokens over TLS", () => {
  it("curl --cacert: 401 without or with a wrong or expired token, 403 without rights", async () => {
    const curl = async (version: string, method: string, token?: string) => {
      const { stdout } = await run("curl", [
        "-s",
        version,
        "--cacert",
        fixture("cert-a.pem"),
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        method,
        "-H",
        "content-type: application/json",
        ...(token === undefined ? [] : ["-H", `authorization: Bearer ${token}`]),
        ...(method === "PUT" ? ["--data", '{"value":1}'] : []),
        `${node.url}/api/class/default/0/objects/c/values/k`,
      ]);
      return stdout;
    };
    for (const version of ["--http1.1", "--http2"]) {
      expect(await curl(version, "PUT"), version).toBe("401");
      expect(await curl(version, "PUT", "wrong-token-0123456789"), version).toBe("401");
      expect(await curl(version, "PUT", EXPIRED), version).toBe("401");
      expect(await curl(version, "PUT", READER), version).toBe("403");
      expect(await curl(version, "PUT", WRITER), version).toBe("204");
      expect(await curl(version, "GET", READER), version).toBe("200");
    }
  });

  it("connect-node over TLS", async () => {
    const data = createClient(
      DataService,
      createGrpcTransport({
        baseUrl: node.url,
        nodeOptions: { ca: readFileSync(fixture("cert-a.pem")) },
      }),
    );
    const req = {
      clsId: "default",
      objectIdStr: "t",
      keyStr: "k",
      value: { data: new Uint8Array([7]) },
    };
    const codeOf = (token?: string) =>
      data
        .setValue(req, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
        .then(
          () => 0,
          (e: unknown) => ConnectError.from(e).code,
        );
    expect(await codeOf()).toBe(Code.Unauthenticated);
    expect(await codeOf(EXPIRED)).toBe(Code.Unauthenticated);
    expect(await codeOf(READER)).toBe(Code.PermissionDenied);
    expect(await codeOf(WRITER)).toBe(0);
  });

  it.skipIf(skipPythonInterop)(
    "grpcio: SSL channel credentials with access-token call credentials",
    async () => {
      const python = findPythonWithGrpc();
      if (python === undefined) throw new Error("python3 with grpcio is required");
      const body = Buffer.from(
        toBinary(
          SetKeyRequestSchema,
          create(SetKeyRequestSchema, {
            clsId: "default",
            objectIdStr: "py",
            keyStr: "k",
            value: { data: new Uint8Array([1]) },
          }),
        ),
      ).toString("hex");
      const script = `
import grpc, sys
ssl = grpc.ssl_channel_credentials(root_certificates=open(sys.argv[2], "rb").read())
for token in sys.argv[4:]:
    creds = ssl if token == "-" else grpc.composite_channel_credentials(
        ssl, grpc.access_token_call_credentials(token))
    with grpc.secure_channel(sys.argv[1], creds) as ch:
        try:
            ch.unary_unary("/oprc.DataService/SetValue")(bytes.fromhex(sys.argv[3]), timeout=10)
            print("OK")
        except grpc.RpcError as e:
            print(e.code().name)
`;
      const { stdout } = await run(python, [
        "-c",
        script,
        `localhost:${node.port}`,
        fixture("cert-a.pem"),
        body,
        "-",
        "wrong-token-0123456789",
        EXPIRED,
        READER,
        WRITER,
      ]);
      expect(stdout.trim().split("\n")).toEqual([
        "UNAUTHENTICATED",
        "UNAUTHENTICATED",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "OK",
      ]);
    },
  );
});

// TLS on the node's one port, through a real `odgm` process: curl over HTTP/1.1 and HTTP/2
// with --cacert, connect-node gRPC, Google's C-core (python3-grpcio) with SSL channel
// credentials, and a renewed certificate picked up on SIGHUP without a restart.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, SetKeyRequestSchema } from "@oprc/grpc-api";
import { findPythonWithGrpc, skipPythonInterop } from "@oprc/grpc-api/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { tempDir } from "./fixtures/temp-node.js";

const run = promisify(execFile);
const fixture = (name: string): string =>
  fileURLToPath(new URL(`./fixtures/tls/${name}`, import.meta.url));
let node: OdgmProcess;
let dir: string | undefined;
let certFile: string;
let keyFile: string;
beforeAll(async () => {
  // Files the test can replace, as a certificate renewal does.
  dir = await tempDir("odgm-tls-");
  certFile = `${dir}/cert.pem`;
  keyFile = `${dir}/key.pem`;
  await run("cp", [fixture("cert-a.pem"), certFile]);
  await run("cp", [fixture("key-a.pem"), keyFile]);
  node = await startOdgmProcess({
    ODGM_DATA_DIR: `${dir}/data`,
    ODGM_TLS_CERT: certFile,
    ODGM_TLS_KEY: keyFile,
  });
});
afterAll(async () => {
  if (node !== undefined && node.child.exitCode === null) node.child.kill("SIGTERM");
  await node?.exited;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** SHA-256 fingerprint of the certificate a new connection is served. */
const servedCert = (port: number): Promise<string> =>
  new Promise((resolve, reject) => {
    const s = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.destroy();
    });
    s.on("error", reject);
  });

describe("TLS", () => {
  it("answers https (HTTP/1.1 and HTTP/2) and gRPC over TLS; cleartext is refused", async () => {
    expect(node.url).toMatch(/^https:\/\//);
    for (const version of ["--http1.1", "--http2"]) {
      const { stdout } = await run("curl", [
        "-s",
        version,
        "--cacert",
        fixture("cert-a.pem"),
        "-w",
        " %{http_version}",
        `${node.url}/healthz`,
      ]);
      expect(stdout).toBe(`{"status":"ok"} ${version === "--http2" ? "2" : "1.1"}`);
    }
    const data = createClient(
      DataService,
      createGrpcTransport({
        baseUrl: node.url,
        nodeOptions: { ca: readFileSync(fixture("cert-a.pem")) },
      }),
    );
    await data.setValue({
      clsId: "default",
      objectIdStr: "t",
      keyStr: "k",
      value: { data: new Uint8Array([7]) },
    });
    expect(
      (await data.getValue({ clsId: "default", objectIdStr: "t", keyStr: "k" })).value?.data,
    ).toEqual(new Uint8Array([7]));
    // Plain HTTP on the TLS port gets no answer.
    await expect(
      run("curl", ["-s", "-f", "--max-time", "3", `http://127.0.0.1:${node.port}/healthz`]),
    ).rejects.toThrow();
  });

  it.skipIf(skipPythonInterop)("grpcio (C-core) with SSL channel credentials", async () => {
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
creds = grpc.ssl_channel_credentials(root_certificates=open(sys.argv[2], "rb").read())
with grpc.secure_channel(sys.argv[1], creds) as ch:
    ch.unary_unary("/oprc.DataService/SetValue")(bytes.fromhex(sys.argv[3]), timeout=10)
print("ok")
`;
    const { stdout } = await run(python, [
      "-c",
      script,
      `localhost:${node.port}`,
      fixture("cert-a.pem"),
      body,
    ]);
    expect(stdout.trim()).toBe("ok");
  });

  it("SIGHUP re-reads a renewed certificate for new connections", async () => {
    const before = await servedCert(node.port);
    await run("cp", [fixture("cert-b.pem"), certFile]);
    await run("cp", [fixture("key-b.pem"), keyFile]);
    node.child.kill("SIGHUP");
    let after = before;
    for (let i = 0; i < 50 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await servedCert(node.port);
    }
    expect(after).not.toBe(before);
    const { stdout } = await run("curl", [
      "-s",
      "--cacert",
      fixture("cert-b.pem"),
      `${node.url}/healthz`,
    ]);
    expect(stdout).toBe('{"status":"ok"}');
    expect(node.output()).toContain("reloaded the TLS certificate");
  });
});

import { readFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createDualProtocolServer,
  type DualProtocolServer,
  type DualProtocolServerOptions,
} from "./dual-protocol-server.js";

let server: DualProtocolServer | undefined;
/** The h2c engine of the describe block running (every test runs on both). */
let engine: "lean" | "node" = "lean";
afterEach(async () => {
  await server?.close(1_000);
  server = undefined;
});

async function start(
  limits: Partial<
    Pick<
      DualProtocolServerOptions,
      "idleTimeoutMs" | "headersTimeoutMs" | "pingTimeoutMs" | "maxConnections"
    >
  > = {},
): Promise<DualProtocolServer> {
  server = await createDualProtocolServer({
    host: "127.0.0.1",
    port: 0,
    h2cEngine: engine,
    // The lean engine serves h2c when there is a stream handler: one that takes nothing
    // passes every stream to Node's server through its bridge.
    ...(engine === "lean" ? { streamHandler: () => false } : {}),
    ...limits,
    handler: (req, res) => {
      res.setHeader("content-type", "text/plain");
      res.end(`${req.httpVersion} ${req.method} ${req.url}`);
    },
  });
  return server;
}

function h1Get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
}

function h2Get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    client.on("error", reject);
    const req = client.request({ ":path": path });
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => {
      client.close();
      resolve(body);
    });
    req.on("error", reject);
    req.end();
  });
}

for (const h2c of ["lean", "node"] as const)
  describe(`dual-protocol server (${h2c} h2c engine)`, () => {
    beforeAll(() => {
      engine = h2c;
    });
    it("serves HTTP/1.1 and prior-knowledge HTTP/2 on one port", async () => {
      const { address } = await start();
      expect(await h1Get(address.port, "/a")).toBe("1.1 GET /a");
      expect(await h2Get(address.port, "/b")).toBe("2.0 GET /b");
      expect(await h1Get(address.port, "/c")).toBe("1.1 GET /c");
    });

    it("handles a preface split across packets", async () => {
      const { address } = await start();
      const socket = net.connect(address.port, "127.0.0.1");
      await new Promise((r) => socket.once("connect", r));
      // Byte-at-a-time start of an HTTP/1.1 request that shares "P" with the preface.
      socket.write("P");
      await new Promise((r) => setTimeout(r, 20));
      socket.write(
        "OST /split HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
      );
      const reply = await new Promise<string>((resolve) => {
        let data = "";
        socket.on("data", (c) => {
          data += c.toString();
        });
        socket.on("end", () => resolve(data));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 200/);
      expect(reply).toContain("1.1 POST /split");
    });

    it("answers garbage with 400 and keeps serving", async () => {
      const { address } = await start();
      const socket = net.connect(address.port, "127.0.0.1");
      await new Promise((r) => socket.once("connect", r));
      socket.write("\x00\x01\x02 not http\r\n\r\n");
      const reply = await new Promise<string>((resolve) => {
        let data = "";
        socket.on("data", (c) => {
          data += c.toString();
        });
        socket.on("close", () => resolve(data));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400/);
      expect(await h2Get(address.port, "/ok")).toBe("2.0 GET /ok");
    });

    it("close() finishes with open idle connections", async () => {
      const { address } = await start();
      const client = http2.connect(`http://127.0.0.1:${address.port}`);
      await new Promise((r) => client.once("connect", r));
      const idle = net.connect(address.port, "127.0.0.1");
      await new Promise((r) => idle.once("connect", r));
      const s = server;
      server = undefined;
      await s?.close(500);
      client.destroy();
      idle.destroy();
    });

    it("requestsDone() waits for requests in flight on both protocols, but not long-lived ones", async () => {
      const held: (() => void)[] = [];
      server = await createDualProtocolServer({
        host: "127.0.0.1",
        port: 0,
        h2cEngine: engine,
        longLived: (path) => path === "/stream",
        // Streams the stream handler takes count alike.
        streamHandler: (stream, headers) => {
          if (headers[":path"] !== "/fast") return false;
          held.push(() => {
            stream.respond({ ":status": 200 });
            stream.end("done");
          });
          return true;
        },
        handler: (req, res) => {
          // "/stream" is never answered while the test runs; the rest when released.
          if (req.url === "/stream") return;
          held.push(() => res.end("done"));
        },
      });
      const port = server.address.port;
      await server.requestsDone();
      const client = http2.connect(`http://127.0.0.1:${port}`);
      const stream = client.request({ ":path": "/stream", ":method": "POST" });
      const h2 = h2Get(port, "/h2");
      const h1 = h1Get(port, "/h1");
      const fast = h2Get(port, "/fast");
      for (let i = 0; i < 200 && held.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
      expect(held.length).toBe(3);
      let done = false;
      const drained = server.requestsDone().then(() => {
        done = true;
      });
      held[0]?.();
      held[1]?.();
      await new Promise((r) => setTimeout(r, 50));
      expect(done).toBe(false);
      held[2]?.();
      await drained;
      expect(await Promise.all([h2, h1, fast])).toEqual(["done", "done", "done"]);
      expect(stream.closed).toBe(false);
      stream.close();
      client.close();
    });

    it("a stream handler takes the HTTP/2 streams it wants; the rest reach the request handler", async () => {
      const offered: string[] = [];
      server = await createDualProtocolServer({
        host: "127.0.0.1",
        port: 0,
        h2cEngine: engine,
        streamHandler: (stream, headers) => {
          offered.push(String(headers[":path"]));
          if (headers[":path"] !== "/fast") return false;
          stream.respond({ ":status": 200 });
          stream.end("taken");
          return true;
        },
        handler: (req, res) => res.end(`${req.httpVersion} ${req.method} ${req.url}`),
      });
      const port = server.address.port;
      expect(await h2Get(port, "/fast")).toBe("taken");
      expect(await h2Get(port, "/slow")).toBe("2.0 GET /slow");
      // HTTP/1.1 requests are not streams: the request handler serves them.
      expect(await h1Get(port, "/fast")).toBe("1.1 GET /fast");
      expect(offered).toEqual(["/fast", "/slow"]);
    });

    it("streams left to the request handler keep HTTP/2's expectations and CONNECT answers", async () => {
      const { address } = await start();
      const client = http2.connect(`http://127.0.0.1:${address.port}`);
      const answer = (
        headers: http2.OutgoingHttpHeaders,
      ): Promise<{ status: number; body: string; continued: boolean }> =>
        new Promise((resolve, reject) => {
          const req = client.request(headers, { endStream: false });
          let status = 0;
          let body = "";
          let continued = false;
          req.on("continue", () => {
            continued = true;
            req.end();
          });
          req.on("response", (h) => {
            status = Number(h[":status"]);
          });
          req.setEncoding("utf8");
          req.on("data", (c: string) => {
            body += c;
          });
          req.on("end", () => resolve({ status, body, continued }));
          req.on("error", reject);
          if (headers.expect === undefined) req.end();
        });
      expect(await answer({ ":path": "/c", ":method": "POST", expect: "100-continue" })).toEqual({
        status: 200,
        body: "2.0 POST /c",
        continued: true,
      });
      expect((await answer({ ":path": "/e", ":method": "POST", expect: "something" })).status).toBe(
        417,
      );
      expect((await answer({ ":method": "CONNECT", ":authority": "example.org:443" })).status).toBe(
        405,
      );
      client.close();
    });

    it("close() ends idle HTTP/1.1 keep-alive sockets at once and busy ones after their response", async () => {
      let release: (() => void) | undefined;
      server = await createDualProtocolServer({
        host: "127.0.0.1",
        port: 0,
        h2cEngine: engine,
        handler: (req, res) => {
          if (req.url === "/slow") {
            release = () => res.end("slow done");
            return;
          }
          res.end("fast");
        },
      });
      const { port } = server.address;
      const agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
      const get = (path: string) =>
        new Promise<{ body: string; connection: string | undefined }>((resolve, reject) => {
          http
            .get({ host: "127.0.0.1", port, path, agent }, (res) => {
              let body = "";
              res.setEncoding("utf8");
              res.on("data", (c: string) => {
                body += c;
              });
              res.on("end", () => resolve({ body, connection: res.headers.connection }));
            })
            .on("error", reject);
        });
      expect((await get("/fast")).body).toBe("fast"); // leaves an idle keep-alive socket
      const slow = get("/slow");
      while (release === undefined) await new Promise((r) => setTimeout(r, 5));
      const s = server;
      server = undefined;
      const closing = s.close(60_000); // a long grace: only the sockets' own ends can finish it
      release();
      expect(await slow).toEqual({ body: "slow done", connection: "close" });
      await closing;
      agent.destroy();
    });

    describe("connection limits and timeouts", () => {
      /** Resolves with the ms until `socket` closed, or -1 if it was still open at `withinMs`. */
      const closedWithin = (socket: net.Socket, withinMs: number): Promise<number> => {
        const t0 = Date.now();
        return new Promise((resolve) => {
          const timer = setTimeout(() => resolve(-1), withinMs);
          socket.once("close", () => {
            clearTimeout(timer);
            resolve(Date.now() - t0);
          });
        });
      };

      it("a slowloris HTTP/1.1 client (headers a byte at a time) is cut off at the headers deadline", async () => {
        const { address } = await start({ headersTimeoutMs: 300 });
        const socket = net.connect(address.port, "127.0.0.1");
        socket.on("error", () => undefined);
        await new Promise((r) => socket.once("connect", r));
        socket.write("GET /slow HTTP/1.1\r\n");
        const dribble = setInterval(() => socket.writable && socket.write("X"), 50);
        const closed = await closedWithin(socket, 3000);
        clearInterval(dribble);
        expect(closed).toBeGreaterThan(0);
        expect(closed).toBeLessThan(2000);
        // A kept-alive socket gets the same deadline before its next request.
        const ka = net.connect(address.port, "127.0.0.1");
        ka.on("error", () => undefined);
        await new Promise((r) => ka.once("connect", r));
        ka.write("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        const drip = setInterval(() => ka.writable && ka.write("G"), 50);
        const kaClosed = await closedWithin(ka, 3000);
        clearInterval(drip);
        expect(kaClosed).toBeGreaterThan(0);
        expect(await h1Get(address.port, "/still")).toBe("1.1 GET /still");
      });

      it("an idle HTTP/2 session is closed after the idle timeout; a busy one is not", async () => {
        const { address } = await start({ idleTimeoutMs: 300 });
        const idle = http2.connect(`http://127.0.0.1:${address.port}`);
        idle.on("error", () => undefined);
        const goaway = new Promise<number>((resolve) => {
          const t0 = Date.now();
          idle.once("goaway", () => resolve(Date.now() - t0));
        });
        await new Promise((r) => idle.once("connect", r));
        expect(await goaway).toBeLessThan(2000);
        // A session that keeps sending requests stays.
        const busy = http2.connect(`http://127.0.0.1:${address.port}`);
        let busyGoaway = false;
        busy.on("goaway", () => {
          busyGoaway = true;
        });
        for (let i = 0; i < 10; i++) {
          await new Promise<void>((resolve) => {
            const req = busy.request({ ":path": `/${i}` });
            req.resume();
            req.on("end", () => resolve());
            req.end();
          });
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(busyGoaway).toBe(false);
        busy.close();
      });

      it("refuses connections beyond maxConnections and serves again once one closes", async () => {
        const { address } = await start({ maxConnections: 2 });
        const open = [
          net.connect(address.port, "127.0.0.1"),
          net.connect(address.port, "127.0.0.1"),
        ];
        for (const s of open) await new Promise((r) => s.once("connect", r));
        await new Promise((r) => setTimeout(r, 50));
        const third = net.connect(address.port, "127.0.0.1");
        third.on("error", () => undefined);
        expect(await closedWithin(third, 2000)).toBeGreaterThanOrEqual(0);
        for (const s of open) s.destroy();
        await new Promise((r) => setTimeout(r, 50));
        expect(await h1Get(address.port, "/again")).toBe("1.1 GET /again");
      });
    });

    describe("TLS", () => {
      const fixture = (name: string): Buffer =>
        readFileSync(fileURLToPath(new URL(`../../test/fixtures/tls/${name}`, import.meta.url)));
      const a = { cert: fixture("cert-a.pem"), key: fixture("key-a.pem") };
      const b = { cert: fixture("cert-b.pem"), key: fixture("key-b.pem") };
      const tlsServer = async () => {
        server = await createDualProtocolServer({
          host: "127.0.0.1",
          port: 0,
          tls: a,
          handler: (req, res) => res.end(`${req.httpVersion} ${req.method} ${req.url}`),
        });
        return server;
      };
      const h1s = (port: number, ca: Buffer): Promise<string> =>
        new Promise((resolve, reject) => {
          https
            .get({ host: "127.0.0.1", port, path: "/one", ca, agent: false }, (res) => {
              let body = "";
              res.on("data", (c: Buffer) => {
                body += c.toString();
              });
              res.on("end", () => resolve(body));
            })
            .on("error", reject);
        });
      const h2s = (port: number, ca: Buffer): Promise<string> =>
        new Promise((resolve, reject) => {
          const client = http2.connect(`https://127.0.0.1:${port}`, { ca });
          client.on("error", reject);
          const req = client.request({ ":path": "/two" });
          let body = "";
          req.on("data", (c: Buffer) => {
            body += c.toString();
          });
          req.on("end", () => {
            client.close();
            resolve(body);
          });
          req.end();
        });
      const served = (port: number): Promise<string> =>
        new Promise((resolve, reject) => {
          const socket = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
            const fp = socket.getPeerCertificate().fingerprint256;
            socket.destroy();
            resolve(fp);
          });
          socket.on("error", reject);
        });

      it("serves HTTP/1.1 and HTTP/2 over TLS on one port, chosen by ALPN", async () => {
        const { address, scheme } = await tlsServer();
        expect(scheme).toBe("https");
        expect(await h1s(address.port, a.cert)).toBe("1.1 GET /one");
        expect(await h2s(address.port, a.cert)).toBe("2.0 GET /two");
        // A certificate the client does not trust is refused by the client.
        await expect(h1s(address.port, b.cert)).rejects.toThrow();
      });

      it("setTls swaps the certificate for new connections", async () => {
        const { address } = await tlsServer();
        const before = await served(address.port);
        server?.setTls(b);
        const after = await served(address.port);
        expect(after).not.toBe(before);
        expect(await h2s(address.port, b.cert)).toBe("2.0 GET /two");
      });
    });
  });

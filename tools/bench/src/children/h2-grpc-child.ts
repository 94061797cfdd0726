// Baseline server: raw `node:http2` answering every POST with a gRPC-framed empty message
// (status 200, `content-type: application/grpc`, one 5-byte frame, trailer grpc-status 0).
// Any unary gRPC call whose response message may be empty (Capabilities, Stats) succeeds
// against it, so the same connect-node client drives it and the real service: the gap is
// everything the RPC framework and the service do above HTTP/2. `GET /count` answers how
// many calls it served (so a load generator's count can be checked against the server's).
import http2 from "node:http2";

const EMPTY_FRAME = Buffer.from([0, 0, 0, 0, 0]);
const server = http2.createServer();
let served = 0;
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  if (headers[":method"] === "GET" && headers[":path"] === "/count") {
    stream.respond({ ":status": 200, "content-type": "text/plain" });
    stream.end(String(served));
    return;
  }
  served++;
  stream.resume();
  stream.on("end", () => {
    stream.respond(
      { ":status": 200, "content-type": "application/grpc" },
      {
        waitForTrailers: true,
      },
    );
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(EMPTY_FRAME);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  process.stdout.write(`BENCH_READY ${port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));

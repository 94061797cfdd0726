// Baseline for the RPC benchmark: a raw node:http2 server answering every request with a
// fixed, valid gRPC response (one empty message, grpc-status 0), no framework at all.
import { createServer } from "node:http2";

const EMPTY_FRAME = Buffer.from([0, 0, 0, 0, 0]);
const server = createServer();
server.on("stream", (stream) => {
  stream.on("data", () => {});
  stream.on("end", () => {
    stream.respond(
      { ":status": 200, "content-type": "application/grpc" },
      { waitForTrailers: true },
    );
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(EMPTY_FRAME);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`{"url":"http://127.0.0.1:${server.address().port}"}\n`);
});
process.on("SIGTERM", () => process.exit(0));

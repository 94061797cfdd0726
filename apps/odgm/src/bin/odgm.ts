#!/usr/bin/env node
// The `odgm` command. The service itself lands with issue 7; until then this says so
// plainly instead of pretending to serve.
process.stderr.write("odgm: the service is not built yet (see apps/odgm/README.md)\n");
process.exitCode = 1;

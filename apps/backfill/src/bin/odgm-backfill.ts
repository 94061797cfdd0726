#!/usr/bin/env node
// The `odgm-backfill` command. The tool lands with issue 9; until then this says so
// plainly instead of pretending to convert anything.
process.stderr.write("odgm-backfill: the tool is not built yet (see apps/backfill/README.md)\n");
process.exitCode = 1;

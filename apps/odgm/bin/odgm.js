#!/usr/bin/env node
// The `odgm` command: runs the built program (dist/bin/odgm.js) in this process, so
// signals sent to the started PID reach it. A committed file rather than a path into
// dist/, so installing the workspace before a build links the command without a warning.
import "../dist/bin/odgm.js";

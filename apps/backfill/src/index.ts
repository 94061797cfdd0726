// @oprc/backfill — odgm-backfill as a library: run a conversion in-process (embedding,
// tests) or run the command line itself.

export type { BackfillErrorCode } from "./backfill-error.js";
export { BackfillError, isBackfillError } from "./backfill-error.js";
export type { CliIo } from "./cli.js";
export { EXIT_CODES, runCli } from "./cli.js";
export type { ObjectProblem } from "./conversion-target.js";
export type { BackfillOptions, BackfillProgress, BackfillSummary } from "./run-backfill.js";
export { runBackfill } from "./run-backfill.js";

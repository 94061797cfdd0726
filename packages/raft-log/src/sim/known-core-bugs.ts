/**
 * Seeds that fail because of a genuine, diagnosed bug in the Raft core (not in the
 * simulator). Only `sim --skip-known` (used by the mutation runner, where such a seed would
 * not show that a mutant was caught) consults it; the CI run exempts no seed.
 *
 * Empty: core bugs A, B, C and E that the simulator found (seeds 468, 474, 1949, 6940,
 * 8090, 9921 and more with `--silent-drops`) are fixed, and their minimal reproductions are
 * regression tests in test/sim-core-bugs. Add a seed here only with a diagnosis in
 * src/sim/README.md, and remove it with the fix.
 */
export const KNOWN_CORE_BUG_SEEDS: ReadonlyMap<number, string> = new Map<number, string>();

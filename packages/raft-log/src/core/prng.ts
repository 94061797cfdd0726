/**
 * A seeded pseudo-random generator (mulberry32) returning floats in [0, 1). The core draws
 * election timeouts from the function passed as `RaftOptions.random`; this is the default,
 * seeded with the node id so that runs are reproducible.
 *
 * @example
 * ```ts
 * const random = createPrng(42);
 * random(); // same sequence on every run
 * ```
 */
export function createPrng(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A bounded wait for a test: polls a condition, then asserts it, so a condition that never
// comes fails the test at the assertion instead of hanging it.
import { expect } from "vitest";

/** Polls `cond` every `stepMs` until it holds or `timeoutMs` passed, then expects it to hold. */
export async function until(cond: () => boolean, timeoutMs = 5000, stepMs = 10): Promise<void> {
  for (let waited = 0; waited < timeoutMs && !cond(); waited += stepMs) {
    await new Promise((r) => setTimeout(r, stepMs));
  }
  expect(cond()).toBe(true);
}

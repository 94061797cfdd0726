import { runEntryStoreConformance } from "../test/conformance.js";
import { createMemoryEngine } from "./memory-engine.js";

runEntryStoreConformance({
  name: "memory",
  createEngine: () => Promise.resolve(createMemoryEngine()),
});

import { runEntryStoreConformance } from "../test/conformance.js";
import { runKvEngineConformance } from "../test/kv-conformance.js";
import { createMemoryEngine } from "./memory-engine.js";

runEntryStoreConformance({
  name: "memory",
  createEngine: () => Promise.resolve(createMemoryEngine()),
});

runKvEngineConformance({
  name: "memory",
  createEngine: () => Promise.resolve(createMemoryEngine()),
});

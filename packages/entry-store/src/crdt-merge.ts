import { StoreError } from "./store-error.js";

type Automerge = typeof import("@automerge/automerge");
let automerge: Promise<Automerge> | undefined;

/** Loads `@automerge/automerge` on first use (it carries a WebAssembly module). */
export function loadAutomerge(): Promise<Automerge> {
  automerge ??= import("@automerge/automerge").catch((err: unknown) => {
    automerge = undefined;
    throw new StoreError("unavailable", "cannot load @automerge/automerge", { cause: err });
  });
  return automerge;
}

/**
 * A synchronous merge of two Automerge documents (saved form) → the saved merge, for the
 * planner. `stored` that does not load is `corrupt_record` (naming `storedKey`); `incoming`
 * that does not load is `invalid_argument`.
 */
export function mergeCrdtSync(
  am: Automerge,
): (stored: Uint8Array, incoming: Uint8Array, storedKey: Uint8Array) => Uint8Array {
  return (stored, incoming, storedKey) => {
    let local: ReturnType<Automerge["load"]>;
    let remote: ReturnType<Automerge["load"]>;
    try {
      local = am.load(stored);
    } catch (err) {
      throw new StoreError("corrupt_record", "stored CRDT value is not an Automerge document", {
        cause: err,
        key: storedKey.slice(),
      });
    }
    try {
      remote = am.load(incoming);
    } catch (err) {
      throw new StoreError("invalid_argument", "CRDT value is not an Automerge document", {
        cause: err,
      });
    }
    try {
      return am.save(am.merge(local, remote));
    } catch (err) {
      throw new StoreError("invalid_argument", "CRDT values cannot be merged", { cause: err });
    }
  };
}

// The end of the event loop's turn, shared by the work a node defers to it: a leader's Ready
// (raft-group.ts), the batch of messages to each peer (raft-transport.ts) and the Raft log's
// group writes (the committer's `schedule`). Each defers so that what one turn brings (the
// requests of many sockets, the messages of many groups) goes out together. With plain
// `setImmediate` that would cost a turn per stage: an immediate queued while immediates run
// waits for the next turn, after its I/O, so a leader's Ready deferred to the end of one turn
// would send its appends and start its log write only at the end of the next. Work deferred
// here from inside a deferred callback runs in the same check phase instead, after
// everything deferred before it.

/** Callbacks run in one pass at most; the rest wait for the next turn (a guard against a loop). */
const MAX_PER_PASS = 100_000;

const queue: (() => void)[] = [];
let scheduled = false;

/** Runs `fn` at the end of this turn of the event loop (see the module comment). */
export function atEndOfTurn(fn: () => void): void {
  queue.push(fn);
  if (!scheduled) {
    scheduled = true;
    setImmediate(runTurnEnd);
  }
}

function runTurnEnd(): void {
  let ran = 0;
  try {
    // Callbacks deferred by these ones are appended, and run in this same pass.
    while (ran < queue.length && ran < MAX_PER_PASS) {
      const fn = queue[ran] as () => void;
      ran++;
      fn();
    }
  } finally {
    // A callback that throws ends the pass (the error is uncaught, as from an immediate);
    // the callbacks after it run in the next turn.
    queue.splice(0, ran);
    scheduled = queue.length > 0;
    if (scheduled) setImmediate(runTurnEnd);
  }
}

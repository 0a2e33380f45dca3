// Cooperative scheduling of the login pipeline on the event loop. On PGlite every statement runs
// synchronously on the event loop, and the awaits between them are microtasks: without a break,
// a login's whole pipeline (and every other login's that is ready) runs in one stretch, and the
// token checks that arrived meanwhile wait behind it. `yieldToEventLoop` ends such a stretch; the
// waiting continuations are resumed one per event-loop turn, so pending I/O (the token checks) is
// served between two login steps, never behind several.
const waiting: Array<() => void> = [];
let scheduled = false;

function resumeOne(): void {
  scheduled = false;
  waiting.shift()?.();
  if (waiting.length) schedule();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(resumeOne);
}

/** Resolves on a later event-loop turn, after the I/O that is ready now has been handled. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

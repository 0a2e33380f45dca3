// Waiting for a condition instead of for a time: polls `cond` until it holds, or fails after `ms`.

/** Polls `cond` until it holds (throws after `ms`); the time it took, in milliseconds. */
export async function until(cond: () => Promise<boolean> | boolean, ms = 5000): Promise<number> {
  const started = performance.now();
  while (!(await cond())) {
    if (performance.now() - started > ms) throw new Error(`condition not reached within ${ms} ms`);
    await Bun.sleep(2);
  }
  return performance.now() - started;
}

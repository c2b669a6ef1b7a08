// Cooperative cancellation for long pure computations: a signal is only seen between macrotasks.

/**
 * A monotonic clock in milliseconds. Not performance.now(): `performance` loads Node's perf_hooks
 * on first use, and this module is loaded by every command (docs/benchmarks.md, CLI cold start).
 */
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

let lastYield = nowMs();

/** How long pure work may run without giving the event loop (and a SIGINT handler) a turn. */
export const YIELD_EVERY_MS = 20;

/**
 * Gives the event loop a turn when the work has run for YIELD_EVERY_MS since the last one (a
 * signal handler can only run then), and throws the signal's reason once it is aborted. Cheap
 * enough to call in every iteration of a search: most calls only read the clock.
 */
export async function checkpoint(signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  if (nowMs() - lastYield < YIELD_EVERY_MS) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  lastYield = nowMs();
  signal?.throwIfAborted();
}

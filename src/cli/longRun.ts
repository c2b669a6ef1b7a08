// V8's tiering for the CLI's long runs (advice, `gpus --fit`): optimize later, so fewer functions are compiled for work that ends in a fraction of a second.
import { setFlagsFromString } from "node:v8";

/**
 * V8's `--interrupt-budget` (bytecode a function runs before V8 considers optimizing it with
 * TurboFan) by V8 version, as measured: Node 20's V8 11.3. Elsewhere nothing is changed.
 */
const DEFAULT_BUDGETS: Readonly<Record<string, number>> = { "11.3": 67_584 };

/**
 * How much later a long run optimizes. Advice and `gpus --fit` run hundreds of functions hot enough
 * for the default budget, for a few hundred milliseconds: TurboFan's compiles on V8's helper
 * threads were about half their CPU (`perf` per thread: GPT-3's check 414 of 902 ms on the helpers,
 * the advice case 401 of 798; some functions compiled 3 to 7 times after deoptimizing), and on a
 * loaded host they take the cores the answer runs on. Four times the budget leaves the hottest
 * loops (the replays, a timeline's copies) optimized and the main thread no slower
 * (docs/benchmarks.md, "Tenth round", heavy10).
 */
const FACTOR = 4;

let running = 0;

/**
 * Runs `work` with V8's budget raised, and puts the default back when the last such work ends:
 * bin/vramfit.js writes its code cache after the run, and V8 refuses a cache made under other
 * flags than the next run starts with (left raised, every run recompiled the whole CLI). It
 * changes no answer, only when V8 compiles.
 */
export async function asLongRun<T>(work: () => Promise<T>): Promise<T> {
  const budget = DEFAULT_BUDGETS[/^\d+\.\d+/.exec(process.versions.v8)?.[0] ?? ""];
  if (budget === undefined) return work();
  if (running++ === 0) setFlagsFromString(`--interrupt-budget=${FACTOR * budget}`);
  try {
    return await work();
  } finally {
    if (--running === 0) setFlagsFromString(`--interrupt-budget=${budget}`);
  }
}

// `--device all` on a simulated 8-GPU box: every device is probed at once (a thread each in the
// addon), so the whole takes about as long as the slowest device, not the sum of them.
import { describe, expect, it } from "vitest";
import { runJson, simulatedGpus } from "./runCli.js";

const H100 = "NVIDIA H100 80GB HBM3:85520809984:0";
// Every call that reaches a GPU takes 10 ms, plus 5 ms × (ordinal + 1): GPU 7 is the slowest.
// The answer, 60: (85,520,809,984 − 4,276,040,500 of default reserve − 7,631 pages of 2 MiB for 1e9
// parameters × 16 B − the 512 MiB job context) / 1 GiB = 60.26.
const EIGHT_GPUS = simulatedGpus(Array.from({ length: 8 }, (_, i) => `${H100}:delay=${5 * (i + 1)}`).join(";"), { CUDASIM_CALL_DELAY_MS: "10" });
const WORKLOAD = ["batch", "--params", "1e9", "--per-sample", "1GiB"];

interface BatchJson {
  batchSize: number;
  elapsedMs: number;
  device: { ordinal: number };
}

async function timed<T>(body: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await body();
  return { value, ms: performance.now() - started };
}

describe("vramfit batch --device all on 8 GPUs", () => {
  it("takes about as long as the slowest GPU, not the sum", async () => {
    const slowest = await timed(() => runJson<BatchJson>([...WORKLOAD, "--device", "7"], EIGHT_GPUS));
    const all = await timed(() => runJson<BatchJson[]>([...WORKLOAD, "--device", "all"], EIGHT_GPUS));
    expect(all.value.status).toBe(0);
    expect(all.value.json.map((r) => [r.device.ordinal, r.batchSize])).toEqual(Array.from({ length: 8 }, (_, i) => [i, 60]));
    const each = all.value.json.map((r) => r.elapsedMs);
    const sum = each.reduce((a, b) => a + b, 0);
    const alone = slowest.value.json.elapsedMs;
    const figures = JSON.stringify({ each, alone, allMs: all.ms, slowestMs: slowest.ms });
    // Each device's search took its own time, not its own plus the others' (serialized, GPU 7
    // would wait for all 7 others: about 4.5 times its own). These are the searches' own clocks,
    // which CPU load barely moves: the simulated latency is sleep.
    expect(Math.max(...each), figures).toBeLessThan(2 * alone);
    expect(sum, figures).toBeGreaterThan(4 * alone); // what one at a time would have cost
    // And the command as a whole, start-up included, well below the sum.
    expect(all.ms, figures).toBeLessThan(slowest.ms + sum / 2);
  });
});

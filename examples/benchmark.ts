// A benchmarking script: finds the largest batch that fits on this GPU, runs a benchmark at that
// batch, and writes one JSON record (stdout, or --out FILE) to collect across machines.
//   npm run example -- examples/benchmark.ts --model bert-base --seq 128 --out bench.json
// `step()` is a stand-in workload (CPU arithmetic whose cost grows with the batch): put your
// model's training step there.
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { VramfitError, backend, exitStatusOf, findMaxBatch, memGetInfo, parseCount, parseReserve, parseSetup, planMemory, resolveWorkload, type BatchResult, type MemoryPlan } from "vramfit";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "bert-base" },
    seq: { type: "string" },
    mode: { type: "string" },
    precision: { type: "string" },
    optimizer: { type: "string" },
    device: { type: "string", default: "0" },
    // Headroom: a size or a percentage of the total (default: the library's, 5% of the total).
    reserve: { type: "string" },
    steps: { type: "string", default: "20" },
    out: { type: "string" },
  },
});

// Every option through the library's own parsers: `--reserve 1GiB` is 1 GiB (Number() made it NaN),
// and a bad value is one line naming the option, exit 2, as in the CLI.
let plan: MemoryPlan, device: number, steps: number, fit: BatchResult;
try {
  plan = planMemory(
    resolveWorkload({ model: values.model }),
    parseSetup({ mode: values.mode, precision: values.precision, optimizer: values.optimizer, seq: values.seq }),
  );
  device = parseCount("--device", values.device, 0);
  steps = parseCount("--steps", values.steps);
  // Measured on the GPU; with none, predicted for an H100 so the script still produces a record.
  const reserve = values.reserve === undefined ? {} : parseReserve(values.reserve, "--reserve");
  fit = await findMaxBatch(plan, { device, ...reserve, fallback: { gpu: "H100-80GB" } });
} catch (error) {
  if (!(error instanceof VramfitError)) throw error;
  console.error(`benchmark: ${error.message}`);
  process.exit(exitStatusOf(error));
}
if (fit.batchSize === 0) {
  console.error(`benchmark: ${plan.description} does not fit even at batch 1 on ${fit.device.name}`);
  process.exit(1);
}

/** The stand-in training step: touches `batch` samples of 4 KiB each. */
function step(batch: number): number {
  const samples = new Float32Array(batch * 1024);
  let sum = 0;
  for (let i = 0; i < samples.length; i += 1) {
    samples[i] = Math.sin(i) * 0.5;
    sum += samples[i]! * samples[i]!;
  }
  return sum;
}

const timesMs: number[] = [];
for (let i = -3; i < steps; i += 1) {
  const started = performance.now();
  step(fit.batchSize);
  if (i >= 0) timesMs.push(performance.now() - started); // the first three warm up
}
timesMs.sort((a, b) => a - b);
const medianMs = timesMs[Math.floor(timesMs.length / 2)]!;
const onGpu = (await backend()).kind === "cuda";

const record = {
  host: hostname(),
  node: process.version,
  workload: plan.description,
  device: fit.device,
  batch: {
    size: fit.batchSize,
    source: fit.source,
    ...(fit.reason !== undefined && { reason: fit.reason }),
    predicted: fit.predictedBatchSize,
    probes: fit.probes,
    budgetBytes: fit.budgetBytes,
    bytesAtBatch: fit.bytesAtBatch,
    searchMs: fit.elapsedMs,
  },
  benchmark: {
    steps,
    medianMs,
    p90Ms: timesMs[Math.floor(timesMs.length * 0.9)]!,
    samplesPerSecond: (fit.batchSize * 1000) / medianMs,
  },
  // After the search, free memory is back where it was: the probes hold nothing.
  freeBytesAfter: onGpu ? (await memGetInfo(device)).freeBytes : null,
};
const text = `${JSON.stringify(record, null, 2)}\n`;
if (values.out) writeFileSync(values.out, text);
else process.stdout.write(text);

// A training launcher: sizes the micro-batch with findMaxBatch() on this GPU, then starts the trainer
// with it, and gradient accumulation to reach a global batch.
//   npm run example -- examples/launcher.ts --model gpt2-xl --seq 1024 --multiple-of 8 --global-batch 512 \
//     -- python train.py --micro-batch {batch} --accumulate {accumulate}
// In the trainer's arguments {batch} and {accumulate} are replaced; BATCH_SIZE and
// GRAD_ACCUM_STEPS are set in its environment. It refuses to train on a guess: without a usable
// GPU it exits 3 (give --gpu ID to dry-run against a catalog GPU).
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { VramfitError, exitStatusOf, findMaxBatch, formatBytes, parseCount, parseReserve, parseSetup, planMemory, resolveWorkload, type BatchResult, type MemoryPlan } from "vramfit";

const { values, positionals: trainer } = parseArgs({
  allowPositionals: true,
  options: {
    model: { type: "string" },
    seq: { type: "string" },
    mode: { type: "string" },
    precision: { type: "string" },
    optimizer: { type: "string" },
    checkpointing: { type: "string" },
    device: { type: "string", default: "0" },
    gpu: { type: "string" },
    // Headroom for what the plan does not hold (NCCL buffers, cuDNN's workspaces, …): a size or a
    // percentage of the total; default: the library's, 5% of the total.
    reserve: { type: "string" },
    "multiple-of": { type: "string", default: "1" },
    "global-batch": { type: "string" },
  },
});
if (!values.model || trainer.length === 0) {
  console.error("usage: launcher.ts --model NAME [--seq N …] [--multiple-of N] [--global-batch N] -- TRAINER [ARGS… {batch} {accumulate}]");
  process.exit(2);
}

// Every option through the library's own parsers: `--multiple-of 0` is an error, not BATCH_SIZE=NaN.
// A bad value is one line naming it, exit 2; no usable GPU exits 3 (exitStatusOf, as the CLI does).
let plan: MemoryPlan, fit: BatchResult, multiple: number, globalBatch: number | undefined;
try {
  plan = planMemory(
    resolveWorkload({ model: values.model }),
    parseSetup({ mode: values.mode, precision: values.precision, optimizer: values.optimizer, seq: values.seq, checkpointing: values.checkpointing }),
  );
  multiple = parseCount("--multiple-of", values["multiple-of"]);
  globalBatch = values["global-batch"] === undefined ? undefined : parseCount("--global-batch", values["global-batch"]);
  const target = values.gpu ? { gpu: values.gpu } : { device: parseCount("--device", values.device, 0), ...(values.reserve === undefined ? {} : parseReserve(values.reserve, "--reserve")) };
  fit = await findMaxBatch(plan, target);
} catch (error) {
  if (!(error instanceof VramfitError)) throw error;
  console.error(`launcher: ${error.message}`);
  process.exit(exitStatusOf(error));
}

const batch = Math.floor(fit.batchSize / multiple) * multiple;
if (batch === 0) {
  console.error(`launcher: ${plan.description} does not fit a batch of ${multiple} on ${fit.device.name} (largest: ${fit.batchSize})`);
  process.exit(1);
}
const accumulate = Math.ceil((globalBatch ?? batch) / batch);

const where = fit.device.ordinal !== null ? `device ${fit.device.ordinal} (${fit.device.name})` : fit.device.name;
const args = trainer.slice(1).map((a) => a.replaceAll("{batch}", String(batch)).replaceAll("{accumulate}", String(accumulate)));
console.error(
  `launcher: micro-batch ${batch} × ${accumulate} accumulation steps on ${where}: ${formatBytes(fit.bytesAtBatch)} of ` +
    `${formatBytes(fit.budgetBytes)} [${fit.source}, largest ${fit.batchSize}]; running ${[trainer[0], ...args].join(" ")}`,
);

const child = spawn(trainer[0]!, args, {
  stdio: "inherit",
  env: { ...process.env, BATCH_SIZE: String(batch), GRAD_ACCUM_STEPS: String(accumulate) },
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));

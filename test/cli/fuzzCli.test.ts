// Property-based fuzzing of the whole CLI: generated argument vectors (every option of the table,
// with good, bad and absurd values, and workload files good and broken) run in process through
// run(), and a smaller sample through the spawned CLI. Every one ends in a result (exit 0/1, or 3
// when a GPU is required) or in one error line with exit 2; never a stack trace, never a hang,
// never NaN, Infinity or a negative size in the output. Fixed seed and counts, stated below.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../src/cli/main.js";
import { OPTIONS } from "../../src/cli/options.js";
import { FUZZ_SCALE, runs, tally, writeTallies, type Tally } from "../fuzz/tally.js";
import { lockDir, nvmlSimulator, root, simulatedGpus, simulator, startCli, type CliRun } from "./runCli.js";

const SEED = 4_242;
// Times VRAMFIT_FUZZ_SCALE; scripts/fuzz.mjs runs more, for docs/reliability.md's figures.
const IN_PROCESS_RUNS = runs(1500);
const SPAWNED_RUNS = runs(24);
const GPU = "NVIDIA H100 80GB HBM3:85520809984:3221225472";

const scratch = mkdtempSync(join(tmpdir(), "vramfit-fuzz-"));
const brokenJson = join(scratch, "broken.json");
const emptyArray = join(scratch, "array.json");
writeFileSync(brokenJson, '{ "model_type": "llama", ');
writeFileSync(emptyArray, "[]");
// Past the input limits: nesting, a dimension, the layers, a long string (each refused in one line).
const deepJson = join(scratch, "deep.json");
writeFileSync(deepJson, `${"[".repeat(100_000)}${"]".repeat(100_000)}`);
const TRANSFORMER = { kind: "transformer", hiddenSize: 64, layers: 2, heads: 4, vocabSize: 100, maxPositions: 64 };
const wideJson = join(scratch, "wide.json");
writeFileSync(wideJson, JSON.stringify({ ...TRANSFORMER, hiddenSize: 1e15 }));
const layersJson = join(scratch, "layers.json");
writeFileSync(layersJson, JSON.stringify({ ...TRANSFORMER, layers: 10_000_000 }));
const longJson = join(scratch, "long.json");
writeFileSync(longJson, JSON.stringify({ ...TRANSFORMER, name: "n".repeat(1_000_000) }));
const fixture = (path: string) => resolve(root, "test", "fixtures", path);

const junk = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.constantFrom("", " ", "-1", "0", "NaN", "Infinity", "1e400", "9007199254740993", "0x10", "½", "--", "-", "--json", "\u00a0", "1,5", "1e-400"),
);
// Mostly values an option accepts, sometimes one it must refuse.
const mostly = (good: fc.Arbitrary<string>) => fc.oneof({ weight: 5, arbitrary: good }, { weight: 1, arbitrary: junk });
const size = mostly(fc.constantFrom("1GiB", "512MiB", "80GB", "0", "1e9", "7e9", "1.5GiB", "8PiB", "9PiB", "0.3GiB", "1.3", "16G", "2GiB", "100MiB"));
const count = mostly(fc.oneof(fc.integer({ min: 0, max: 70 }).map(String), fc.constantFrom("7e9", "1e6", "4096", "1.5", "-3", "1e16", "128", "512")));
const files = fc.constantFrom(
  fixture("hf/gpt2.json"),
  fixture("hf/llama-2-7b-hf.json"),
  fixture("spec/tiny-llama.json"),
  fixture("spec/small-resnet.json"),
  fixture("spec/affine.json"),
  brokenJson,
  emptyArray,
  "/nonexistent.json",
  scratch,
  deepJson,
  wideJson,
  layersJson,
  longJson,
  "/dev/zero",
  "/dev/null",
);

/** Values worth trying for each option, by its name. */
function valuesFor(flag: string): fc.Arbitrary<string> {
  const choices: Record<string, string[]> = {
    "--mode": ["train", "infer", "TRAIN", "eval"],
    "--precision": ["fp32", "fp16", "bf16", "amp", "fp8"],
    "--optimizer": ["sgd", "momentum", "adam", "adamw", "adam8bit", "lion"],
    "--attention": ["flash", "eager", "sdpa", "x"],
    "--checkpointing": ["full", "selective", "none", "half"],
    "--offload": ["optimizer", "params", "both", "none", "disk"],
    "--zero": ["0", "1", "2", "3", "4"],
    "--device": ["0", "all", "1", "7", "-1", "x", "GPU-00000000-0000-0000-0000-000000000000", "MIG-x"],
    "--gpu": ["H100-80GB", "A100-40GB", "rtx-4090", "h100-80gv", "T4"],
    "--model": ["gpt2", "bert-large", "resnet50", "llama-2-7b", "vit-base", "gtp2", "nonesuch"],
    "--lock-timeout": ["0", "1s", "500ms", "2m", "soon", "-1"],
    "--seq": ["128", "512", "2048", "0", "1e9"],
    "--image": ["224", "32", "512", "0"],
    "--tp": ["1", "2", "4", "3"],
    "--gpus": ["1", "8", "64", "0"],
    // Real jobs that fail (not out of memory) or cannot start: --exec then has no answer to give.
    "--exec": ["false", "0", "exit 2", ""],
    "--log-dir": [scratch, join(scratch, "no", "such", "dir")],
  };
  if (flag === "--hf-config" || flag === "--spec") return files;
  // `plan --svg FILE` and `plan --events FILE` write FILE: into the scratch directory, or somewhere they cannot
  // (a number given to --events was a file named "31" in the checkout).
  if (flag === "--svg" || flag === "--events") {
    const name = flag === "--svg" ? "chart.svg" : "events.txt";
    return fc.constantFrom(join(scratch, name), join(scratch, "no", "such", "dir", name), scratch);
  }
  if (choices[flag]) return mostly(fc.constantFrom(...choices[flag]));
  if (/size|memory|mem|need|reserve|per-sample|fixed/.test(flag)) return size;
  return count;
}

function optionArgs(spec: (typeof OPTIONS)[number]): fc.Arbitrary<string[]> {
  const flag = spec.flags.split(/[ ,]/)[0]!;
  if (spec.flags.includes("<")) return valuesFor(flag).map((value) => [flag, value]);
  if (spec.flags.includes("[")) return fc.option(valuesFor(flag), { nil: undefined }).map((value) => (value === undefined ? [flag] : [flag, value]));
  return fc.constant([flag]);
}
const anyOption = fc.oneof(...OPTIONS.map(optionArgs));
const oddArgs = fc.oneof(junk.map((text) => [text]), fc.constantFrom(["--bogus"], ["--mdoel", "gpt2"], ["extra"], ["--help"]));
const workloadArgs = fc.constantFrom([], ["--model", "gpt2"], ["--params", "1e9", "--per-sample", "1GiB"], ["--model", "resnet50", "--image", "224"], ["--spec", fixture("spec/tiny-llama.json")]);
const COMMAND_NAMES = ["batch", "check", "plan", "info", "gpus", "models"] as const;
const argv = fc
  .oneof({ weight: 15, arbitrary: fc.constantFrom(...COMMAND_NAMES) }, { weight: 1, arbitrary: junk })
  .chain((name) => {
    const own = OPTIONS.filter((o) => (o.commands as readonly string[]).includes(name));
    const options = own.length > 0 ? fc.oneof({ weight: 8, arbitrary: fc.oneof(...own.map(optionArgs)) }, { weight: 1, arbitrary: anyOption }, { weight: 1, arbitrary: oddArgs }) : anyOption;
    const workload = ["batch", "check", "plan"].includes(name) ? workloadArgs : fc.constant([]);
    return fc.tuple(fc.constant(name), workload, fc.array(options, { maxLength: 4 }), fc.boolean());
  })
  .map(([name, workload, options, json]) => [name, ...workload, ...options.flat(), ...(json ? ["--json"] : [])]);

/** Every number in a JSON value is finite and not negative. */
function expectSaneNumbers(value: unknown, path = "$"): void {
  if (typeof value === "number") {
    expect(Number.isFinite(value) && value >= 0, `${path} = ${value}`).toBe(true);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => expectSaneNumbers(v, `${path}[${i}]`));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) expectSaneNumbers(v, `${path}.${k}`);
  }
}

function expectWellBehaved(args: readonly string[], result: CliRun, t: Tally): void {
  const where = `vramfit ${args.map((a) => JSON.stringify(a)).join(" ")}\nstdout: ${result.stdout.slice(0, 400)}\nstderr: ${result.stderr.slice(0, 2000)}`;
  // A job run by --exec that fails by itself (not out of memory) leaves nothing to answer: exit 4, one line saying so.
  const jobFailed = args.includes("--exec") && result.status === 4 && /^vramfit: .*the job (failed|could not)/m.test(result.stderr);
  const stackTrace = /\n\s+at .+:\d+:\d+/.test(result.stderr) || /internal error/.test(result.stderr);
  if (stackTrace) t.stackTraces += 1;
  else if (!jobFailed && ![0, 1, 2, 3].includes(result.status ?? -1)) t.wrongStatuses += 1;
  else if (result.status === 2 || result.status === 3 || jobFailed) t.rejections += 1;
  else t.answers += 1;
  if (!jobFailed) expect([0, 1, 2, 3], where).toContain(result.status);
  expect(result.stderr, where).not.toMatch(/\n\s+at .+:\d+:\d+/); // no stack trace
  expect(result.stderr, where).not.toMatch(/internal error/);
  // An error echoes a short excerpt of what it was given, never a whole file's field.
  expect(result.stderr.length, where).toBeLessThan(4000);
  if (result.status === 2 || result.status === 3) {
    expect(result.stdout, where).toBe("");
    const lines = result.stderr.trimEnd().split("\n");
    // One error line (`vramfit: …`), after at most a warning about the command itself: batch --exec
    // warns about a job that ignores its batch before it resolves the device or looks for a GPU.
    expect(lines.at(-1), where).toMatch(/^vramfit: /);
    expect(lines.slice(0, -1).every((line) => line.startsWith("warning: ")), where).toBe(true);
    return;
  }
  if (result.stdout.trimStart().startsWith("{") || result.stdout.trimStart().startsWith("[")) {
    expectSaneNumbers(JSON.parse(result.stdout));
  }
  expect(result.stdout, where).not.toMatch(/\bNaN\b|Infinity/);
  // formatBytes writes "-1.50 GiB" (with a space); model names such as Llama-3.1-8B are not sizes.
  expect(result.stdout, where).not.toMatch(/(^|[\s(])-\d+(\.\d+)? (B|KiB|MiB|GiB|TiB|PiB)\b/m);
}

async function runInProcess(args: readonly string[], t: Tally): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const io = { out: (text: string) => void (stdout += text.endsWith("\n") ? text : `${text}\n`), err: (text: string) => void (stderr += text.endsWith("\n") ? text : `${text}\n`) };
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => {
        t.hangs += 1;
        reject(new Error(`hung: ${args.join(" ")}`));
      }, 10_000)),
  );
  const started = performance.now();
  t.inputs += 1;
  try {
    const status = await Promise.race([run(args, io), hang]);
    return { status, stdout, stderr };
  } finally {
    clearTimeout(timer);
    t.slowestMs = Math.max(t.slowestMs, performance.now() - started);
  }
}

const TALLY = { inProcess: tally("the CLI in process (argument vectors)"), spawned: tally("the CLI as a process (argument vectors)") };
afterAll(() => writeTallies("fuzzCli"));

beforeAll(() => {
  // The in-process backend: one simulated H100 (and its NVML), so device paths are fuzzed too.
  Object.assign(process.env, simulatedGpus(GPU, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, VRAMFIT_LOCK_DIR: lockDir }));
  expect(process.env.VRAMFIT_CUDA_LIBRARY).toBe(simulator);
});

describe(`the CLI, fuzzed (seed ${SEED})`, () => {
  it(`${IN_PROCESS_RUNS} generated argument vectors in process: a result, or one line with exit 2`, async () => {
    await fc.assert(
      fc.asyncProperty(argv, async (args) => expectWellBehaved(args, await runInProcess(args, TALLY.inProcess), TALLY.inProcess)),
      { seed: SEED, numRuns: IN_PROCESS_RUNS },
    );
  }, 120_000 * FUZZ_SCALE);

  it(`${SPAWNED_RUNS} of them through the real process: the same, with real exit statuses`, async () => {
    const sample = fc.sample(argv, { seed: SEED + 1, numRuns: SPAWNED_RUNS });
    const env = simulatedGpus(GPU, { VRAMFIT_NVML_LIBRARY: nvmlSimulator });
    for (let i = 0; i < sample.length; i += 4) {
      const batch = sample.slice(i, i + 4);
      const started = performance.now();
      const results = await Promise.all(batch.map((args) => startCli(args, env).finished));
      TALLY.spawned.slowestMs = Math.max(TALLY.spawned.slowestMs, performance.now() - started);
      results.forEach((result, j) => {
        TALLY.spawned.inputs += 1;
        if (result.signal !== null) TALLY.spawned.wrongStatuses += 1;
        expect(result.signal, batch[j]!.join(" ")).toBeNull();
        expectWellBehaved(batch[j]!, result, TALLY.spawned);
      });
    }
  }, 120_000 * FUZZ_SCALE);
});

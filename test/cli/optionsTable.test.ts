// Every option of the one options table (src/cli/options.ts) with every command it is documented
// for, alone and (batch, check) with --exec: accepted, or refused in one line naming what the user
// typed, never an internal field name (issue 25, items 2 and 8).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../src/cli/main.js";
import { OPTIONS, type CommandName } from "../../src/cli/options.js";
import { buildSimJob, jobEnv } from "../job/simJob.mjs";
import { lockDir, root, simulator } from "./runCli.js";

const scratch = mkdtempSync(join(tmpdir(), "vramfit-options-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const fixture = (...path: string[]) => resolve(root, "test", "fixtures", ...path);

/** The workload every command gets unless the option replaces it (a small transformer: fast to plan). */
const WORKLOAD = ["--model", "bert-base", "--seq", "128"];

/**
 * The arguments that exercise an option, with the companions it is documented to need (a raw
 * workload's other half, --tp for --sequence-parallel, ...), and whether they replace WORKLOAD.
 */
function exercise(flag: string, command: CommandName): { args: string[]; workload?: string[] } {
  const table: Record<string, { args: string[]; workload?: string[] }> = {
    "--model": { args: ["--model", "gpt2-medium"], workload: [] },
    "--hf-config": { args: ["--hf-config", fixture("hf", "gpt2.json"), "--seq", "128"], workload: [] },
    "--spec": { args: ["--spec", fixture("spec", "affine.json")], workload: [] },
    "--params": { args: ["--params", "1e9", "--per-sample", "64MiB"], workload: [] },
    "--per-sample": { args: ["--params", "1e9", "--per-sample", "64MiB"], workload: [] },
    "--fixed": { args: ["--params", "1e9", "--per-sample", "64MiB", "--fixed", "1GiB"], workload: [] },
    "--trace": { args: ["--trace", fixture("trace", "hand-made.json")], workload: [] },
    "--image": { args: ["--model", "vit-b16", "--image", "224"], workload: [] },
    "--resident-encoders": { args: ["--model", "sd2.1-unet", "--resident-encoders"], workload: [] },
    "--ep": { args: ["--model", "mixtral-8x7b", "--seq", "128", "--gpus", "8", "--zero", "3", "--ep", "8"], workload: [] },
    "--capacity-factor": { args: ["--model", "mixtral-8x7b", "--seq", "128", "--capacity-factor", "1.25"], workload: [] },
    "--seq": { args: ["--model", "bert-base", "--seq", "256"], workload: [] },
    "--mode": { args: ["--mode", "infer"] },
    "--generate": { args: ["--model", "gpt2-medium", "--seq", "128", "--mode", "infer", "--generate", "64"], workload: [] },
    "--kv-cache": { args: ["--model", "gpt2-medium", "--seq", "128", "--mode", "infer", "--kv-cache", "fp8"], workload: [] },
    "--attention": { args: ["--attention", "eager"] },
    "--allocator": { args: ["--allocator", "raw"] },
    "--sequence-parallel": { args: ["--tp", "2", "--sequence-parallel"] },
    "--zero": { args: ["--zero", "2", "--gpus", "4"] },
    "--ddp-bucket-view": { args: ["--gpus", "4", "--ddp-bucket-view"] },
    "--offload": { args: ["--zero", "2", "--gpus", "2", "--offload", "optimizer"] },
    "--gpus-per-node": { args: ["--zero", "2", "--gpus", "2", "--offload", "optimizer", "--gpus-per-node", "2"] },
    "--host-memory": { args: ["--zero", "2", "--gpus", "2", "--offload", "optimizer", "--host-memory", "64GiB"] },
    "--lora-targets": { args: ["--lora-rank", "8", "--lora-targets", "all-linear"] },
    "--lora-rank": { args: ["--lora-rank", "8"] },
    "--checkpointing": { args: ["--checkpointing"] },
    "--batch": command === "batch" ? { args: ["--model", "gpt2-medium", "--solve", "seq", "--batch", "2"], workload: [] } : { args: ["--batch", "2"] },
    "--solve": { args: ["--model", "gpt2-medium", "--solve", "seq", "--batch", "2"], workload: [] },
    "--need": { args: ["--need", "10GiB"], workload: [] },
    "--device": { args: ["--device", "0"] },
    "--gpu": { args: ["--gpu", "A100-80GB"] },
    "--memory": { args: ["--memory", "24GiB"] },
    "--reserve": { args: ["--reserve", "5%"] },
    "--min-batch": { args: command === "gpus" ? ["--fit", "--min-batch", "64"] : ["--min-batch", "2"] },
    "--fit": { args: ["--fit"] },
    "--svg": { args: ["--gpu", "A100-80GB", "--svg", join(scratch, "chart.svg")] },
    "--compute-capability": { args: ["--compute-capability", "8.0"] },
    "--hf-loss": { args: ["--model", "gpt2-medium", "--seq", "128", "--hf-loss", "legacy"], workload: [] },
    "--lora-dropout": { args: ["--lora-rank", "8", "--lora-dropout", "0.1"] },
    "--zero-grad": { args: ["--zero-grad", "zeros"] },
    "--alloc-conf": { args: ["--alloc-conf", "max_split_size_mb:128"] },
    "--events": { args: ["--events", join(scratch, "events.log")] },
    "--exec": { args: ["--exec", "JOB {batch}"] },
    "--calibrate": { args: ["--exec", "JOB {batch}", "--calibrate", "1,4"] },
    "--run-timeout": { args: ["--exec", "JOB {batch}", "--run-timeout", "5m"] },
    "--log-dir": { args: ["--exec", "JOB {batch}", "--log-dir", join(scratch, "logs")] },
  };
  const known = table[flag];
  if (known !== undefined) return known;
  // Otherwise a value of the placeholder's kind.
  const spec = OPTIONS.find((o) => o.flags.split(/[ ,]/)[0] === flag)!;
  const placeholder = /<([^>]+)>/.exec(spec.flags)?.[1];
  const samples: Record<string, string> = { n: "2", size: "1GiB", duration: "30s", kind: "raw", p: "bf16", o: "sgd", impl: "foreach", m: "train", stage: "1", r: "8", c: "1", format: "bf16", list: "q,v", what: "optimizer", path: "python3" };
  if (placeholder === undefined) return { args: [flag] };
  const value = samples[placeholder];
  if (value === undefined) throw new Error(`no sample value for ${spec.flags}: add one to exercise() in this test`);
  return { args: [flag, value] };
}

/** The command line: the workload where the command takes one, and what the command needs besides. */
function commandLine(command: CommandName, workload: readonly string[], args: readonly string[]): string[] {
  if (command === "info" || command === "models") return [command, ...args];
  const line = [...workload, ...args];
  if (command === "check" && !line.includes("--batch") && !line.includes("--need")) line.push("--batch", "1");
  if (command === "gpus" && !line.includes("--fit") && line.some((a) => WORKLOAD_SOURCES.has(a))) line.unshift("--fit");
  return [command, ...line];
}

const WORKLOAD_SOURCES = new Set(["--model", "--hf-config", "--spec", "--params", "--trace"]);
/** What describes the workload: every option `plan` and `gpus` take besides a target's. */
const WORKLOAD_OPTIONS = new Set(OPTIONS.filter((o) => o.commands.includes("gpus") && o.commands.includes("plan") && !o.flags.startsWith("--reserve") && !o.flags.startsWith("--json")).map((o) => o.flags.split(" ")[0]!));

const SIMULATED_GPU_ONLY_FLAGS = ["--simulate", "--python", "--cudnn-workspace"];
/** The options that cannot go with --exec, and say so naming the option typed. */
const REFUSED_WITH_EXEC = new Set(["--memory", "--analytic", "--need", "--no-touch", "--solve", ...SIMULATED_GPU_ONLY_FLAGS]);

let job: string;

beforeAll(() => {
  job = buildSimJob();
  Object.assign(process.env, {
    VRAMFIT_CUDA_LIBRARY: simulator,
    CUDASIM_DEVICES: "NVIDIA H100 80GB HBM3:85520809984",
    CUDASIM_CONTEXT_BYTES: "0",
    VRAMFIT_LOCK_DIR: lockDir,
    ...jobEnv({ fixedBytes: 2 ** 30, perSampleBytes: 8 * 2 ** 30, printPeak: true }),
  });
});

async function cli(args: readonly string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const status = await run(
    args.map((a) => a.replace(/^JOB /, `${job} `)),
    { out: (t) => void (stdout += `${t}\n`), err: (t) => void (stderr += `${t}\n`) },
  );
  return { status, stdout, stderr };
}

/** Names no user typed: the library's fields and internal calls. */
const INTERNAL = /\b(options|spec|limits)\.[a-zA-Z]+|loadDriver|internal error|expected no such field/;

// `trace` runs the user's Python under PyTorch: its options are tested with it (test/cli/trace*.test.ts).
const CASES = OPTIONS.flatMap((spec) => spec.commands.filter((command) => command !== "trace").map((command) => ({ flag: spec.flags.split(/[ ,]/)[0]!, command })));
/** Options for --exec on a simulated GPU (--exec --gpu ID): alone they are refused, naming --gpu; with it they need PyTorch (the simulated GPU's own tests). */
const SIMULATED_GPU_ONLY = new Set(SIMULATED_GPU_ONLY_FLAGS);
const uniqueCases = CASES.filter((c, i) => CASES.findIndex((d) => d.flag === c.flag && d.command === c.command) === i);

describe("every option with every command it is documented for", () => {
  it.each(uniqueCases)("$command $flag", async ({ flag, command }) => {
    const { args, workload } = exercise(flag, command);
    // check --exec runs the job at --batch N: no workload there (see below).
    const line = commandLine(command, args.includes("--exec") && command === "check" ? [] : (workload ?? WORKLOAD), args);
    const result = await cli(line);
    expect(result.stderr, line.join(" ")).not.toMatch(INTERNAL);
    if (SIMULATED_GPU_ONLY.has(flag)) {
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/--exec --gpu ID|--gpu ID with it/);
      return;
    }
    expect([0, 1], `${line.join(" ")}\n${result.stderr}`).toContain(result.status);
  });
});

describe("every batch and check option with --exec", () => {
  // --gpu with --exec simulates that GPU under the job's own PyTorch: the simulated GPU's tests cover it.
  const execCases = uniqueCases.filter((c) => (c.command === "batch" || c.command === "check") && c.flag !== "--exec" && c.flag !== "--gpu");
  it.each(execCases)("$command --exec … $flag", async ({ flag, command }) => {
    const { args, workload } = exercise(flag, command);
    const withExec = args.includes("--exec") ? args : ["--exec", "JOB {batch}", ...args];
    // check --exec measures the job at --batch N: a workload is refused there (it only seeds batch's search).
    // batch's --batch is --solve seq's, which a job's runs cannot answer.
    const refused = REFUSED_WITH_EXEC.has(flag) || (command === "batch" && flag === "--batch") || (command === "check" && (args.some((a) => WORKLOAD_OPTIONS.has(a)) || workload !== undefined));
    const line = commandLine(command, command === "check" ? [] : (workload ?? WORKLOAD), withExec);
    const result = await cli(line);
    expect(result.stderr, line.join(" ")).not.toMatch(INTERNAL);
    if (refused) {
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`--exec|${flag}`));
    } else {
      expect([0, 1], `${line.join(" ")}\n${result.stderr}`).toContain(result.status);
    }
  });
});

describe("options that would be ignored, and commands and sizes that were misread, are refused in one line (issue 25, items 5, 8, 9)", () => {
  it.each([
    [["check", "--need", "40"], /^vramfit: --need: expected a size with its unit, e\.g\. 40GiB or 40MiB/],
    [["batch", ...WORKLOAD, "--reserve", "5"], /^vramfit: --reserve: expected a size with its unit, e\.g\. 5GiB/],
    [["frobnicate", "--help"], /^vramfit: unknown command 'frobnicate': expected one of info, batch, check, plan, models, gpus/],
    [["batch", ...WORKLOAD, "--calibrate", "1,4"], /^vramfit: --calibrate: expected --calibrate with --exec/],
    [["batch", ...WORKLOAD, "--mode", "infer", "--optimizer", "adam"], /^vramfit: --optimizer: expected no --optimizer with --mode infer/],
    [["batch", "--exec", "JOB {batch}", "--no-touch"], /^vramfit: --exec: expected no --no-touch with it/],
  ])("%j", async (args, message) => {
    const result = await cli(args);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
  });
});

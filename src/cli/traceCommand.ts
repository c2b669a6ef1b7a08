// `vramfit trace`: runs the Python tracer (python/vramfit_trace) on the user's Python and writes the step trace file --trace reads.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ExitStatus, VramfitError, excerpt, invalidArgument } from "../errors.js";
import { findGpu } from "../devices/catalog.js";
import { readStepTrace } from "../step/traceFile.js";
import { writeJson, type Io } from "./io.js";

export interface TraceOptions {
  hfConfig?: string;
  torchvision?: string;
  timm?: string;
  torch?: string;
  mode?: string;
  seq?: string;
  image?: string;
  precision?: string;
  optimizer?: string;
  optimizerImpl?: string;
  checkpointing?: string | boolean;
  loraRank?: string;
  loraTargets?: string;
  gpu?: string;
  out?: string;
  python?: string;
  json?: boolean;
}

/** The tracer package's folder: `python/` at the package root (dist/cli/ and src/cli/ both sit two below it). */
export const TRACER_DIR = fileURLToPath(new URL("../../python/", import.meta.url));

const SOURCES = [
  ["hfConfig", "--hf-config"],
  ["torchvision", "--torchvision"],
  ["timm", "--timm"],
  ["torch", "--torch"],
] as const;

/** vramfit's run options the tracer takes under the same names, passed on as given (the tracer checks their values). */
const PASSED_ON = [
  ["mode", "--mode"],
  ["seq", "--seq"],
  ["image", "--image"],
  ["precision", "--precision"],
  ["optimizer", "--optimizer"],
  ["optimizerImpl", "--optimizer-impl"],
  ["loraRank", "--lora-rank"],
  ["loraTargets", "--lora-targets"],
  ["out", "--out"],
] as const;

/** The tracer's command line for vramfit's options; bad combinations refused here, in one line. */
export function tracerArguments(options: TraceOptions): string[] {
  const given = SOURCES.filter(([field]) => options[field] !== undefined);
  const expected = "exactly one of --hf-config FILE, --torchvision NAME, --timm NAME, --torch FILE.py:FUNCTION";
  if (given.length === 0) throw invalidArgument("trace", "no model", expected);
  if (given.length > 1) throw invalidArgument(given[1]![1], `given with ${given[0]![1]}`, expected);
  const args = [given[0]![1], options[given[0]![0]]!];
  for (const [field, flag] of PASSED_ON) if (options[field] !== undefined) args.push(flag, options[field]);
  // torch.utils.checkpoint around each layer: the whole layer recomputed, vramfit's `full`.
  if (options.checkpointing === true || options.checkpointing === "full") args.push("--checkpointing");
  else if (options.checkpointing !== undefined) throw invalidArgument("--checkpointing", options.checkpointing, "full, or the bare flag (the tracer checkpoints whole layers with torch.utils.checkpoint)");
  if (options.gpu !== undefined) {
    // The catalog GPU's compute capability decides the attention kernel the trace records.
    const gpu = findGpu(options.gpu);
    args.push("--gpu", gpu.id, "--compute-capability", gpu.computeCapability);
  }
  return args;
}

/** The tracer's last words as one line: its own one-line error, or the last line of anything longer (never a stack trace). */
function tracerLine(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const last = lines.at(-1) ?? "no message";
  return excerpt(last.replace(/^vramfit trace: /, ""), 400);
}

export async function traceCommand(options: TraceOptions, io: Io): Promise<number> {
  const args = tracerArguments(options);
  const python = options.python ?? "python3";
  if (!existsSync(`${TRACER_DIR}vramfit_trace/__main__.py`)) {
    throw new VramfitError("ERR_INVALID_ARGUMENT", `trace: the tracer is missing from this installation (expected ${TRACER_DIR}vramfit_trace/): reinstall vramfit`);
  }
  const env = { ...process.env, PYTHONPATH: [TRACER_DIR, process.env.PYTHONPATH].filter((p) => p !== undefined && p !== "").join(":") };
  const child = spawn(python, ["-m", "vramfit_trace", ...args], { env, stdio: ["ignore", "pipe", "pipe"], ...(io.signal !== undefined && { signal: io.signal }) });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const status = await new Promise<number | null>((resolve, reject) => {
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.name === "AbortError") reject(io.signal?.reason ?? error);
      else reject(invalidArgument("--python", python, `a Python 3 interpreter with torch (${error.code ?? error.message})`));
    });
    child.on("close", (code) => resolve(code));
  });
  if (status !== 0) {
    // The tracer's statuses (python/vramfit_trace/errors.py): 2 bad input, 4 something to install, 5 the step failed.
    // Each is something the user fixes, so each is vramfit's bad-input status; the tracer's line says which.
    io.err(`vramfit: trace: ${tracerLine(stderr)}`);
    return ExitStatus.usage;
  }
  if (stderr !== "") io.err(stderr);
  if (options.out === undefined) {
    io.out(stdout); // the trace itself, JSON already
    return ExitStatus.ok;
  }
  const summary = await traceSummary(options.out);
  if (options.json) writeJson(io, summary);
  else io.out(`trace     ${summary.out}: ${summary.workload.name} (${summary.workload.source}), ${summary.events} events, ${summary.affine ? `fitted at batches ${summary.batches.join(", ")}` : `at batch ${summary.batches[0]} only`}`);
  return ExitStatus.ok;
}

/** What `vramfit trace --out FILE` says of the file it wrote (`--json`: this object). */
async function traceSummary(out: string) {
  const trace = readStepTrace(out, JSON.parse(await readFile(out, "utf8")));
  return { out, workload: trace.workload, affine: trace.affine, batches: trace.batches, events: trace.events.length, environment: trace.environment };
}

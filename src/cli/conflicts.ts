// Options that contradict each other: refused before any work, one line naming both.
import { invalidArgument } from "../errors.js";
import type { Optimizer } from "../plan/bytesPerParameter.js";
import { OPTIMIZER_IMPLS, optimizerTemporaries } from "../plan/optimizerStep.js";
import type { CommandName } from "./options.js";

/** The options this check reads, as commander hands them over (values already parsed). */
export interface ConflictingOptions {
  minBatch?: number;
  maxBatch?: number;
  analytic?: boolean;
  requireGpu?: boolean;
  device?: unknown;
  exec?: string;
  calibrate?: unknown;
  mode?: string;
  optimizer?: string;
  optimizerImpl?: string;
  simulate?: boolean;
  python?: string;
  cudnnWorkspace?: number;
  zero?: unknown;
  gpus?: unknown;
  offload?: string;
}

/**
 * Throws `ERR_INVALID_ARGUMENT` for combinations that cannot both hold: a smallest batch above the
 * largest, and `--analytic` (never touch a GPU) with `--require-gpu` (exit 3 without one) or with
 * `--device all` (a measurement of every device).
 */
export function checkConflicts(command: CommandName, options: ConflictingOptions): void {
  if (command === "batch" && options.minBatch !== undefined && options.maxBatch !== undefined && options.minBatch > options.maxBatch) {
    throw invalidArgument("--min-batch", options.minBatch, `at most --max-batch (${options.maxBatch}): no batch can be both`);
  }
  if (options.analytic === true && options.requireGpu === true) {
    throw invalidArgument("--analytic", "with --require-gpu", "one of them: --analytic never touches the GPU that --require-gpu demands");
  }
  // Options that would otherwise be ignored without a word (issue 25, item 9).
  if (command !== "trace" && options.exec === undefined) {
    const simulated = ([["simulate", "--simulate"], ["python", "--python"], ["cudnnWorkspace", "--cudnn-workspace"]] as const).find(([key]) => options[key] !== undefined);
    if (simulated !== undefined) throw invalidArgument(simulated[1], String(options[simulated[0]]), `${simulated[1]} with --exec --gpu ID (it applies to a job run on a simulated GPU)`);
  }
  if (options.calibrate !== undefined && options.exec === undefined) {
    throw invalidArgument("--calibrate", String(options.calibrate), "--calibrate with --exec (it sets the batches the job's first two runs use)");
  }
  if (options.mode === "infer" && (options.optimizer !== undefined || options.optimizerImpl !== undefined)) {
    const flag = options.optimizer !== undefined ? "--optimizer" : "--optimizer-impl";
    throw invalidArgument(flag, "with --mode infer", `no ${flag} with --mode infer (inference keeps no optimizer states)`);
  }
  if (options.analytic === true && options.device === "all") {
    throw invalidArgument("--analytic", "with --device all", "--device N with --analytic (--device all measures every device), or --gpu ID for a catalog GPU");
  }
}

/**
 * Options that are legal but change nothing here, said on stderr (`warning: …`) rather than
 * refused: DeepSpeed runs ZeRO on one GPU, but without a second rank to partition over it saves
 * nothing (each stage divides its states by the data-parallel degree, 1), unless it offloads.
 * (`gpus --fit` searches the GPU count itself: there --zero without --gpus is what it shards over.)
 */
export function optionWarnings(command: CommandName, options: ConflictingOptions): string[] {
  const warnings: string[] = [];
  const stage = options.zero === undefined ? 0 : Number(options.zero);
  const gpus = options.gpus === undefined ? 1 : Number(options.gpus);
  if (command !== "gpus" && stage > 0 && gpus === 1 && (options.offload === undefined || options.offload === "none")) {
    warnings.push(`--zero ${stage} over one GPU partitions nothing (its states are divided by --gpus, 1): give --gpus N, or --offload to move them to the host`);
  }
  // PyTorch's SGD has all three (torch 2.13.0, torch/optim/sgd.py: `fused: bool | None`, `_fused_sgd`),
  // so the choice is accepted; but every one updates in place, so it moves no byte: say so.
  const optimizer = options.optimizer as Optimizer | undefined;
  if (optimizer !== undefined && options.optimizerImpl !== undefined && options.mode !== "infer" && OPTIMIZER_IMPLS.every((impl) => optimizerTemporaries(optimizer, impl, 4).length === 0)) {
    warnings.push(`--optimizer-impl ${options.optimizerImpl} changes no memory with --optimizer ${optimizer}: every implementation of it updates in place, with no temporary`);
  }
  return warnings;
}


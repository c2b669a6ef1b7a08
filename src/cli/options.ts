// The one table of CLI options: commander definitions, value types and the CLI reference (docs/cli.md).
import { OPTIMIZERS, PRECISIONS } from "../plan/bytesPerParameter.js";
import { OFFLOAD_KINDS } from "../plan/offload.js";
import { KV_CACHE_FORMATS, WEIGHT_FORMATS } from "../plan/quantization.js";
import { OPTIMIZER_IMPLS } from "../plan/optimizerStep.js";
import { ATTENTION_KINDS, MODES } from "../plan/setup.js";
import { checkJobCommand } from "../job/jobCommand.js";
import { invalidArgument } from "../errors.js";
// The small modules themselves, not the library's index: every command loads this table at start.
import { ALLOCATOR_KINDS, DEFAULT_ALLOCATOR } from "../fit/allocator.js";
import { parseAllocConf } from "../fit/allocConf.js";
import { DEFAULT_RESERVE_PERCENT, parseReserve } from "../fit/budget.js";
import { DEFAULT_JOB_CONTEXT_BYTES } from "../fit/context.js";
import { formatBytes } from "../units.js";
import { parseAllocator, parseCalibration, parseCount, parseDevice, parseDeviceSelection, parseDuration, parsePositiveDuration, parsePositiveSize, parseSize, requireUnit } from "./parse.js";

export type CommandName = "info" | "batch" | "check" | "plan" | "models" | "gpus" | "trace";

export interface OptionSpec {
  /** commander flags, e.g. `--memory <size>`. */
  flags: string;
  description: string;
  /** The commands that take it. */
  commands: readonly CommandName[];
  /**
   * Turns the raw text into the typed value; throws one clear line on bad input. Workload and
   * run options have none: resolveWorkload and parseSetup validate them together.
   */
  parse?: (text: string) => unknown;
  /** Shown in help and docs/cli.md; applied by the command, not by commander. */
  defaultText?: string;
}

// `gpus` takes a workload with --fit.
const WORKLOAD: readonly CommandName[] = ["batch", "check", "plan", "gpus"];
const TARGET: readonly CommandName[] = ["batch", "check"];
// `plan` takes a target for its budget line (no probes): --gpu, --memory, or a device's free memory.
const TARGET_AND_PLAN: readonly CommandName[] = [...TARGET, "plan"];
// `trace` runs the model under PyTorch with the same run options, where the tracer has them.
const WORKLOAD_AND_TRACE: readonly CommandName[] = [...WORKLOAD, "trace"];

export const OPTIONS: readonly OptionSpec[] = [
  // Workload: exactly one source
  { flags: "--model <name>", description: "a preset model (see `vramfit models`), e.g. resnet50, bert-large, llama-2-7b", commands: WORKLOAD },
  { flags: "--hf-config <file>", description: "a Hugging Face config.json (BERT, GPT-2, Llama 2/3.x, Mistral, Mixtral, Qwen2/2.5/3, Gemma 2/3, Phi-3, ViT)", commands: WORKLOAD },
  { flags: "--spec <file>", description: "a JSON spec: custom transformer, CNN layer list or affine (docs/memory-model.md, shipped in the package); - reads it from standard input", commands: WORKLOAD },
  { flags: "--params <n>", description: "raw workload: parameter count (e.g. 7e9, or 7B: K, M, B, T)", commands: WORKLOAD },
  { flags: "--per-sample <size>", description: "raw workload: activation bytes per sample (e.g. 1GiB)", commands: WORKLOAD, parse: (t) => requireUnit("--per-sample", t) },
  { flags: "--fixed <size>", description: "raw workload: other fixed bytes", commands: WORKLOAD, parse: (t) => requireUnit("--fixed", t), defaultText: "0" },
  { flags: "--trace <file>", description: "a step PyTorch ran, written by `vramfit trace`: its own allocations, replayed in its order (its run options are baked in)", commands: WORKLOAD },
  // How it runs
  { flags: "--mode <m>", description: MODES.join("|"), commands: WORKLOAD_AND_TRACE, defaultText: "train" },
  { flags: "--precision <p>", description: `weights and activations: ${PRECISIONS.join("|")}`, commands: WORKLOAD_AND_TRACE, defaultText: "amp" },
  { flags: "--optimizer <o>", description: `optimizer: ${OPTIMIZERS.join("|")}`, commands: WORKLOAD_AND_TRACE, defaultText: "adamw" },
  { flags: "--optimizer-impl <impl>", description: `how optimizer.step() runs: ${OPTIMIZER_IMPLS.join("|")} (Adam's temporaries: a copy of the weights, two of the largest tensor, none)`, commands: WORKLOAD_AND_TRACE, defaultText: "foreach (PyTorch 2 on CUDA)" },
  { flags: "--seq <n>", description: "tokens per sample (transformers)", commands: WORKLOAD_AND_TRACE, defaultText: "the model's context length" },
  { flags: "--image <n>", description: "input pixels per side (CNNs, ViT)", commands: WORKLOAD_AND_TRACE, defaultText: "the model's, 224" },
  { flags: "--checkpointing [kind]", description: "recompute activations: selective|full (bare flag: full)", commands: WORKLOAD_AND_TRACE, defaultText: "none" },
  { flags: "--attention <kind>", description: `attention kernel: ${ATTENTION_KINDS.join("|")} (flash keeps no s² scores)`, commands: WORKLOAD, defaultText: "flash" },
  { flags: "--zero <stage>", description: "ZeRO stage 0|1|2|3, sharding over --gpus", commands: WORKLOAD, defaultText: "0" },
  { flags: "--gpus <n>", description: "data-parallel GPUs (DDP's buckets and NCCL's buffers; what ZeRO shards over)", commands: WORKLOAD, defaultText: "1" },
  { flags: "--tp <n>", description: "tensor-parallel degree", commands: WORKLOAD, defaultText: "1" },
  { flags: "--sequence-parallel", description: "Megatron sequence parallelism with --tp", commands: WORKLOAD },
  { flags: "--generate <n>", description: "inference: tokens generated after the --seq prompt (KV cache)", commands: WORKLOAD, defaultText: "0" },
  { flags: "--offload <what>", description: `model states in host memory: ${OFFLOAD_KINDS.filter((k) => k !== "none").join("|")} (ZeRO-Offload; params: ZeRO-3, or inference)`, commands: WORKLOAD, defaultText: "none" },
  { flags: "--lora-rank <r>", description: "train LoRA adapters of rank r on the frozen model (PEFT); with --weights nf4: QLoRA", commands: WORKLOAD_AND_TRACE },
  { flags: "--lora-targets <list>", description: "projections to adapt: q,k,v,o,gate,up,down or all-linear (trace: the model's module names, e.g. q_proj,v_proj)", commands: WORKLOAD_AND_TRACE, defaultText: "q,v (PEFT's default)" },
  { flags: "--weights <format>", description: `linear weights stored as ${WEIGHT_FORMATS.join("|")} (constants included; nf4/int4/int8/fp8 are frozen)`, commands: WORKLOAD, defaultText: "from --precision" },
  { flags: "--kv-cache <format>", description: `inference: KV cache stored as ${KV_CACHE_FORMATS.join("|")}`, commands: WORKLOAD, defaultText: "the activations' dtype" },
  { flags: "--ep <n>", description: "expert parallelism: a mixture of experts' experts sharded over n of the --gpus", commands: WORKLOAD, defaultText: "1" },
  { flags: "--capacity-factor <c>", description: "MoE: token slots per expert over its even share (padded buffers)", commands: WORKLOAD, defaultText: "1 (dropless)" },
  { flags: "--ddp-bucket-view", description: "training over --gpus without ZeRO: DDP's gradient_as_bucket_view (no second copy of the gradients)", commands: WORKLOAD },
  { flags: "--resident-encoders", description: "diffusion UNet (sd2.1-unet): its frozen text encoder and VAE also on the GPU", commands: WORKLOAD },
  { flags: "--compute-capability <x.y>", description: "the target GPU's compute capability: PyTorch's cuBLAS workspace and attention kernel depend on it", commands: WORKLOAD, defaultText: "the --gpu's, else 9.0" },
  { flags: "--hf-loss <kind>", description: "Hugging Face causal-LM loss: current (transformers ≥ 4.46: labels shifted, logits upcast once) | legacy (a shifted copy of the logits)", commands: WORKLOAD, defaultText: "current" },
  { flags: "--lora-dropout <p>", description: "PEFT's lora_dropout: each adapter keeps its dropped input and mask", commands: WORKLOAD, defaultText: "0 (PEFT's default)" },
  { flags: "--grad-accum <n>", description: "micro-batches summed into .grad before each optimizer step (every gradient live all step)", commands: WORKLOAD, defaultText: "1" },
  { flags: "--zero-grad <kind>", description: "zero_grad(set_to_none=True) frees the gradients (none) or keeps them zeroed (zeros)", commands: WORKLOAD, defaultText: "none" },
  { flags: "--gpus-per-node <n>", description: "GPUs sharing one host's memory (for --offload)", commands: WORKLOAD, defaultText: "all of --gpus × --tp" },
  // check and plan
  { flags: "--batch <n>", description: "the batch size to check", commands: ["check"], parse: (t) => parseCount("--batch", t) },
  { flags: "--batch <n>", description: "with --solve seq: the batch the sequence must fit at", commands: ["batch"], parse: (t) => parseCount("--batch", t) },
  { flags: "--solve <what>", description: "batch: the largest batch; seq: the longest --seq at --batch N (text transformers, KV cache included)", commands: ["batch"], parse: parseSolve, defaultText: "batch" },
  { flags: "--batch <n>", description: "the batch size to break down", commands: ["plan"], parse: (t) => parseCount("--batch", t), defaultText: "1" },
  { flags: "--need <size>", description: "a raw requirement instead of a workload (e.g. 40GiB)", commands: ["check"], parse: (t) => parsePositiveSize("--need", t, "0 bytes always fit") },
  // Target
  { flags: "--device <n|uuid|all>", description: "the CUDA device(s) to measure: an ordinal, a UUID (GPU-…, MIG-…) or all", commands: TARGET, parse: parseDeviceSelection, defaultText: "0" },
  { flags: "--device <n|uuid>", description: "the CUDA device whose free memory is the budget: an ordinal or a UUID (GPU-…, MIG-…)", commands: ["plan"], parse: parseDevice },
  { flags: "--gpu <id>", description: "a catalog GPU (analytic), e.g. H100-80GB; see `vramfit gpus`", commands: TARGET_AND_PLAN },
  { flags: "--memory <size>", description: "a raw memory budget (analytic), e.g. 24GiB", commands: TARGET_AND_PLAN, parse: (t) => parseSize("--memory", t) },
  { flags: "--analytic", description: "do not touch the device: use the analytic model", commands: TARGET },
  { flags: "--max-mem <size>", description: "the most this job may use", commands: TARGET_AND_PLAN, parse: (t) => parsePositiveSize("--max-mem", t, "a cap of 0 leaves no memory") },
  { flags: "--reserve <size>", description: "headroom to leave free, also during every probe: a size (2GiB) or a percentage of the total (10%); 0 for none", commands: [...TARGET_AND_PLAN, "gpus"], parse: (t) => parseReserve(requireUnit("--reserve", t), "--reserve"), defaultText: `${DEFAULT_RESERVE_PERCENT}%; with --exec 0, and a run's peak must leave it` },
  // How the job allocates (docs/memory-model.md, "The allocator" and "The CUDA context")
  { flags: "--allocator <kind>", description: `the job's allocator: ${ALLOCATOR_KINDS.join("|")} (PyTorch's caching allocator, with expandable segments, or one cuMemAlloc per tensor)`, commands: WORKLOAD, parse: parseAllocator, defaultText: DEFAULT_ALLOCATOR },
  { flags: "--alloc-conf <string>", description: "the job's PYTORCH_CUDA_ALLOC_CONF, e.g. max_split_size_mb:128 (max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, expandable_segments, garbage_collection_threshold, per_process_memory_fraction, large_segment_size_mb; torch 2.14.1's other keys are accepted and named as not affecting the answer); the answer replays the step with it", commands: WORKLOAD, parse: (t) => (parseAllocConf(t, "--alloc-conf"), t), defaultText: "PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF, from the environment, else PyTorch's defaults" },
  { flags: "--job-context <size>", description: "the job's CUDA context: driver, cuBLAS, cuDNN (vramfit's own context on the device counts toward it)", commands: WORKLOAD, parse: (t) => parseSize("--job-context", t), defaultText: formatBytes(DEFAULT_JOB_CONTEXT_BYTES) },
  { flags: "--max-batch <n>", description: "the largest batch to consider", commands: ["batch"], parse: (t) => parseCount("--max-batch", t) },
  { flags: "--min-batch <n>", description: "batch: the smallest acceptable batch per GPU (below it: advice, exit 1); gpus --fit: the global batch to reach over data-parallel GPUs", commands: ["batch", "gpus"], parse: (t) => parseCount("--min-batch", t) },
  { flags: "--host-memory <size>", description: "host memory for --offload", commands: TARGET, parse: (t) => parseSize("--host-memory", t), defaultText: "MemAvailable in /proc/meminfo" },
  { flags: "--fit", description: "each catalog GPU's largest batch for the workload (and with --min-batch, how many GPUs)", commands: ["gpus"] },
  { flags: "--no-advice", description: "when it does not fit, the verdict only: no advice is measured (advice in --json stays [], with no adviceSummary)", commands: TARGET },
  { flags: "--no-touch", description: "allocate without writing the memory (faster, less certain)", commands: TARGET },
  { flags: "--require-gpu", description: "exit 3 unless a GPU is usable (never fall back)", commands: ["info", "batch", "check"] },
  { flags: "--lock-timeout <duration>", description: "how long to wait while another vramfit probes the same GPU (then exit 5), e.g. 30s, 500ms, 0", commands: TARGET, parse: (t) => parseDuration("--lock-timeout", t), defaultText: "60s" },
  { flags: "--timeline", description: "show what is live in each phase of the training step (forward, loss, backward, optimizer.step), the peak marked; with --svg, draw it", commands: ["plan"] },
  { flags: "--events <file>", description: "write the step's allocations and frees at --batch, one line each (`a ID BYTES`, `f ID`, after `#` header lines): the sequence the allocator emulation and the device probe replay", commands: ["plan"] },
  { flags: "--svg <file>", description: "write a chart of memory against batch size, with the budget line and the largest batch marked (needs a target: --gpu, --memory, or a GPU)", commands: ["plan"] },
  // The real job (--exec)
  { flags: "--exec <command>", description: "run this training command (through the shell) at each candidate batch: {batch} is replaced and VRAMFIT_BATCH set; exit 0 fits, an out-of-memory message does not; with a workload, its model seeds the search", commands: TARGET, parse: (t) => checkJobCommand(t) },
  { flags: "--calibrate <b1,b2>", description: "with --exec: the two batches whose peaks calibrate fixed + per-sample bytes", commands: ["batch"], parse: parseCalibration, defaultText: "1, then the largest batch the first peak proves safe" },
  { flags: "--run-timeout <duration>", description: "with --exec: kill a run's process group after this long, e.g. 90s, 30m", commands: TARGET, parse: (t) => parsePositiveDuration("--run-timeout", t), defaultText: "10m" },
  { flags: "--log-dir <dir>", description: "with --exec: where each run's stdout and stderr are kept", commands: TARGET, defaultText: "a temporary directory, removed after the search unless a run failed (the error names it)" },
  // vramfit trace: the model PyTorch runs (python/vramfit_trace), and where the trace goes
  { flags: "--hf-config <file>", description: "a Hugging Face config.json of any model_type the installed transformers knows (built without weights)", commands: ["trace"] },
  { flags: "--torchvision <name>", description: "a torchvision.models name, e.g. resnet50, vit_b_16", commands: ["trace"] },
  { flags: "--timm <name>", description: "a timm model name", commands: ["trace"] },
  { flags: "--torch <file.py:function>", description: "your own model: FUNCTION(batch) returns it and its step (examples/trace-own-model.py)", commands: ["trace"] },
  { flags: "--gpu <id>", description: "the target, a catalog GPU: its compute capability picks the attention kernel PyTorch would run", commands: ["trace"], defaultText: "compute capability 9.0 (H100)" },
  { flags: "--out <file>", description: "where to write the trace (read it back with --trace FILE)", commands: ["trace"], defaultText: "stdout" },
  { flags: "--python <path>", description: "the Python that runs the tracer: it needs torch (and transformers, timm or torchvision for those models)", commands: ["trace"], defaultText: "python3" },
  { flags: "--simulate", description: "with --exec --gpu ID: run the job on a simulated catalog GPU (vramfit's stub CUDA libraries under the job's PyTorch) even where a GPU is present; without a usable GPU, --exec --gpu simulates anyway", commands: TARGET },
  { flags: "--python <path>", description: "with --exec on a simulated GPU: the job's Python, where vramfit finds its torch to check the stubs cover it", commands: TARGET, defaultText: "python3" },
  { flags: "--cudnn-workspace <size>", description: "with --exec on a simulated GPU: the workspace the stub cuDNN asks for per convolution or plan (real cuDNN's depends on the engine it picks; the reserve covers it elsewhere)", commands: TARGET, parse: (t) => parseSize("--cudnn-workspace", t), defaultText: "0" },
  // Output
  { flags: "--json", description: "JSON on stdout, for scripts (trace --out: what the file holds)", commands: ["info", "batch", "check", "plan", "models", "gpus", "trace"] },
];

/** `--solve batch|seq`. */
function parseSolve(text: string): "batch" | "seq" {
  if (text === "batch" || text === "seq") return text;
  throw invalidArgument("--solve", text, "batch or seq");
}

/** The options that describe the workload and how it runs (those every workload command takes), by their long flag. */
export function workloadFlags(): string[] {
  return OPTIONS.filter((option) => WORKLOAD.every((command) => option.commands.includes(command)) && !option.commands.includes("info") && !option.flags.startsWith("--reserve")).map((option) => option.flags.split(" ")[0]!);
}

/** The key commander gives an option's value: `--lora-rank` is `loraRank`. */
export function attributeName(flag: string): string {
  return flag.replace(/^--/, "").replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

export function optionsFor(command: CommandName): OptionSpec[] {
  return OPTIONS.filter((option) => option.commands.includes(command));
}

// What a target charges a plan for besides its tensors: the job's allocator and CUDA context, and the headroom.
import { invalidArgument } from "../errors.js";
import { allowedMemoryBytes, checkAllocConfWith, parseAllocConf } from "./allocConf.js";
import { ALLOCATOR_KINDS, DEFAULT_ALLOCATOR, type AllocatorKind, type AllocatorModel } from "./allocator.js";
import type { BudgetLimits } from "./budget.js";
import { jobContextBytes } from "./context.js";

/** How the job allocates, as the library's options say it. */
export interface JobModelOptions {
  /** The job's allocator (default `pytorch`): see ALLOCATOR_KINDS. */
  allocator?: AllocatorKind;
  /** The job's CUDA context in bytes (default DEFAULT_JOB_CONTEXT_BYTES, 512 MiB). */
  jobContextBytes?: number;
  /**
   * The job's PYTORCH_CUDA_ALLOC_CONF (e.g. `max_split_size_mb:128,expandable_segments:True`);
   * default: PyTorch's defaults. The library never reads the environment: the CLI passes the
   * job's (`--alloc-conf`, else PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF).
   */
  allocConf?: string;
}

/** The limits of a search: the budget's, and the largest batch wanted. */
export interface SearchLimits extends BudgetLimits {
  /** The largest batch wanted; without it there is no upper bound. */
  maxBatch?: number;
}

/**
 * The allocator model of the job: its allocator, and its whole context charged; on a device of
 * `totalBytes`, the cap its per_process_memory_fraction sets (a fraction needs the device's total:
 * without it the model has no such cap).
 */
export function jobModel(options: JobModelOptions, totalBytes?: number): AllocatorModel {
  let kind = options.allocator ?? DEFAULT_ALLOCATOR;
  if (!ALLOCATOR_KINDS.includes(kind)) throw invalidArgument("allocator", kind, `one of ${ALLOCATOR_KINDS.join(", ")}`);
  const contextBytes = jobContextBytes(options.jobContextBytes);
  if (options.allocConf === undefined || kind === "raw") return { kind, contextBytes };
  if (typeof options.allocConf !== "string") throw invalidArgument("allocConf", options.allocConf, "a PYTORCH_CUDA_ALLOC_CONF string");
  const conf = parseAllocConf(options.allocConf, "allocConf");
  checkAllocConfWith(options.allocConf, kind === "expandable", "allocConf");
  // `expandable` is PyTorch with expandable_segments:True; the configuration can ask for it too.
  if (conf.expandableSegments) kind = "expandable";
  const allowedBytes = allowedMemoryBytes(conf, totalBytes);
  return { kind, contextBytes, conf: kind === "expandable" ? { ...conf, expandableSegments: true } : conf, ...(allowedBytes !== Number.POSITIVE_INFINITY && { allowedBytes }) };
}

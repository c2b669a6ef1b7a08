// What a target charges a plan for besides its tensors: the job's allocator and CUDA context, and the headroom.
import { invalidArgument } from "../errors.js";
import { ALLOCATOR_KINDS, DEFAULT_ALLOCATOR, type AllocatorKind, type AllocatorModel } from "./allocator.js";
import type { BudgetLimits } from "./budget.js";
import { jobContextBytes } from "./context.js";

/** How the job allocates, as the library's options say it. */
export interface JobModelOptions {
  /** The job's allocator (default `pytorch`): see ALLOCATOR_KINDS. */
  allocator?: AllocatorKind;
  /** The job's CUDA context in bytes (default DEFAULT_JOB_CONTEXT_BYTES, 512 MiB). */
  jobContextBytes?: number;
}

/** The limits of a search: the budget's, and the largest batch wanted. */
export interface SearchLimits extends BudgetLimits {
  /** The largest batch wanted; without it there is no upper bound. */
  maxBatch?: number;
}

/** The allocator model of the job: its allocator, and its whole context charged. */
export function jobModel(options: JobModelOptions): AllocatorModel {
  const kind = options.allocator ?? DEFAULT_ALLOCATOR;
  if (!ALLOCATOR_KINDS.includes(kind)) throw invalidArgument("allocator", kind, `one of ${ALLOCATOR_KINDS.join(", ")}`);
  return { kind, contextBytes: jobContextBytes(options.jobContextBytes) };
}

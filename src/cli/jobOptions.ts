// The budget and job options every evaluating command shares, as the library takes them.
import { isTraced, type Planned } from "./workloadOptions.js";
import { DEFAULT_RESERVE_PERCENT, formatBytes, type AllocatorKind, type BudgetLimits, type JobModelOptions } from "../index.js";

export interface JobOptions {
  /** `--reserve SIZE|N%`, parsed. */
  reserve?: Pick<BudgetLimits, "reserveBytes" | "reservePercent">;
  maxMem?: number;
  allocator?: AllocatorKind;
  jobContext?: number;
}

/**
 * --reserve, --max-mem, --allocator and --job-context as library options (absent ones left to the
 * library's defaults). A traced step that measured its job's context (`charged.contextBytes`)
 * charges that unless --job-context says otherwise.
 */
export function jobLimits(options: JobOptions, planned?: Planned): BudgetLimits & JobModelOptions {
  const context = options.jobContext ?? (planned !== undefined && isTraced(planned) ? planned.trace.charged.contextBytes : undefined);
  return {
    ...options.reserve,
    ...(options.maxMem !== undefined && { maxMemBytes: options.maxMem }),
    ...(options.allocator !== undefined && { allocator: options.allocator }),
    ...(context !== undefined && { jobContextBytes: context }),
  };
}

/** The reserve as people read it: `1 GiB`, `5% of the total` (the default). */
export function reserveText(options: JobOptions): string {
  const reserve = options.reserve;
  if (reserve?.reserveBytes !== undefined) return formatBytes(reserve.reserveBytes);
  return `${reserve?.reservePercent ?? DEFAULT_RESERVE_PERCENT}% of the total (--reserve)`;
}

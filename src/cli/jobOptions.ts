// The budget and job options every evaluating command shares, as the library takes them.
import { isTraced, type Planned } from "./workloadOptions.js";
import { DEFAULT_RESERVE_PERCENT, formatBytes, type AllocatorKind, type BudgetLimits, type JobModelOptions } from "../index.js";
import { DEFAULT_ALLOC_CONF, allocConfFromEnvironment, checkAllocConfWith, formatAllocConf, parseAllocConf, type AllocConf } from "../fit/allocConf.js";

export interface JobOptions {
  /** `--reserve SIZE|N%`, parsed. */
  reserve?: Pick<BudgetLimits, "reserveBytes" | "reservePercent">;
  maxMem?: number;
  allocator?: AllocatorKind;
  jobContext?: number;
  /** `--alloc-conf STRING`: the job's PYTORCH_CUDA_ALLOC_CONF (default: the one in this environment). */
  allocConf?: string;
}

/**
 * The PYTORCH_CUDA_ALLOC_CONF the job will run with: --alloc-conf, else this environment's
 * PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF (the job inherits it: allocConfFromEnvironment), checked here (alone and
 * with --allocator) so a bad value is one line naming where it came from; `parsed` is that one parse, for
 * whoever needs the settings. Not for `--allocator raw` (no cache to configure).
 */
export function jobAllocConf(options: JobOptions, env: Readonly<Record<string, string | undefined>> = process.env): { text: string; from: string; parsed: AllocConf } | undefined {
  if (options.allocator === "raw") return undefined;
  const inherited = options.allocConf === undefined ? allocConfFromEnvironment(env) : undefined;
  const given = options.allocConf !== undefined ? { text: options.allocConf, from: "--alloc-conf" } : inherited && { text: inherited.text, from: inherited.variable };
  if (given === undefined) return undefined;
  const parsed = parseAllocConf(given.text, given.from);
  checkAllocConfWith(given.text, options.allocator === "expandable", given.from);
  return { ...given, parsed };
}

/**
 * The line that says which allocator configuration an answer modelled (none for PyTorch's
 * defaults); `--allocator expandable` is expandable_segments:True, and says so.
 */
export function allocConfLine(options: JobOptions, env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const conf = jobAllocConf(options, env);
  const expandable = options.allocator === "expandable";
  if (conf === undefined && !expandable) return undefined;
  const modelled = { ...(conf === undefined ? DEFAULT_ALLOC_CONF : conf.parsed) };
  if (expandable) modelled.expandableSegments = true;
  const text = formatAllocConf(modelled);
  const from = [conf?.from, expandable ? "--allocator expandable" : undefined].filter((source) => source !== undefined).join(" and ");
  const unmodelled = modelled.unmodelled.length > 0 ? `; not affecting the answer: ${modelled.unmodelled.join(",")}` : "";
  return `allocator PYTORCH_CUDA_ALLOC_CONF=${text === "" ? "(PyTorch's defaults)" : text}, from ${from}${unmodelled}`;
}

/**
 * --reserve, --max-mem, --allocator, --job-context and --alloc-conf as library options (absent ones left to the
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
    ...((conf) => conf !== undefined && { allocConf: conf.text })(jobAllocConf(options)),
  };
}

/** The reserve as people read it: `1 GiB`, `5% of the total` (the default). */
export function reserveText(options: JobOptions): string {
  const reserve = options.reserve;
  if (reserve?.reserveBytes !== undefined) return formatBytes(reserve.reserveBytes);
  return `${reserve?.reservePercent ?? DEFAULT_RESERVE_PERCENT}% of the total (--reserve)`;
}

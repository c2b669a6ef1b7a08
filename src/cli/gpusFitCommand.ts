// `vramfit gpus --fit`: each catalog GPU's largest batch for a workload and, with --min-batch, how many GPUs reach it.
import { gpusFit, gpusFitPlan, type GpuFit } from "../advice/gpusFit.js";
import { ExitStatus, invalidArgument } from "../errors.js";
import { resolveSetup } from "../plan/setup.js";
import { formatBytes } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { asLongRun } from "./longRun.js";
import { renderTable } from "./table.js";
import { jobModel } from "../fit/charges.js";
import { allocConfLine, jobLimits, reserveText, type JobOptions } from "./jobOptions.js";
import { isTraced, planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface GpusFitOptions extends WorkloadOptions, JobOptions {
  fit?: boolean;
  minBatch?: number;
  json?: boolean;
}

const WORKLOAD_SOURCES = ["model", "hfConfig", "spec", "params", "perSample", "trace"] as const;

/** Whether `gpus` was asked about a workload (with --fit, or by giving one, which needs --fit). */
export function wantsFit(options: GpusFitOptions): boolean {
  return options.fit === true || options.minBatch !== undefined || WORKLOAD_SOURCES.some((o) => options[o] !== undefined);
}

export async function gpusFitCommand(options: GpusFitOptions, io: Io): Promise<number> {
  if (!options.fit) throw invalidArgument("--fit", "absent", "--fit with a workload or --min-batch (vramfit gpus --fit --model NAME …)");
  if (options.trace !== undefined && options.minBatch !== undefined) {
    throw invalidArgument("--min-batch", options.minBatch, "no --min-batch with --trace (a trace is one GPU's step as run: scaling it out adds what it did not trace, DDP's buckets, ZeRO's shards)");
  }
  const planned = await planFromOptions(options, io.signal);
  const limits = jobLimits(options, planned);
  const signal = io.signal !== undefined && { signal: io.signal };
  // Every catalog GPU's searches: V8 tiered for a long run (src/cli/longRun.ts).
  const rows = await asLongRun(() =>
    isTraced(planned)
      ? gpusFitPlan(planned.plan, { ...limits, ...signal })
      : gpusFit(planned.workload, planned.setup, { ...limits, ...(options.minBatch !== undefined && { minBatch: options.minBatch }), ...signal }),
  );
  if (options.json) {
    writeJson(io, rows);
    return ExitStatus.ok;
  }
  io.out(`workload  ${planned.plan.description}${planned.assumed.length > 0 ? ` (assumed ${planned.assumed.join(" ")})` : ""}`);
  const allocatorLine = allocConfLine(options);
  if (allocatorLine !== undefined) io.out(allocatorLine);
  let scaleOut = "";
  if (options.minBatch !== undefined && !isTraced(planned)) {
    const s = resolveSetup(planned.setup);
    scaleOut =
      `; GPUs to reach a global batch of ${options.minBatch}: data parallel${s.mode === "train" ? ` with ZeRO stage ${s.zeroStage}` : ""}, ` +
      (planned.workload.kind !== "transformer" ? "no tensor parallelism" : planned.setup.tp !== undefined ? `tensor parallel ${s.tp}` : "tensor parallel 1, 2, 4 or 8 (the fewest GPUs)");
  }
  const { kind, contextBytes } = jobModel(limits);
  io.out(`analytic  each GPU's total less ${reserveText(options)}, the ${kind} allocator's segments and a ${formatBytes(contextBytes)} job context${scaleOut}`);
  io.out(renderFitTable(rows, options.minBatch));
  return ExitStatus.ok;
}

function layoutText(row: GpuFit): string {
  const layout = row.layout;
  if (!layout) return "-";
  const zero = layout.zeroStage > 0 ? `, zero ${layout.zeroStage}` : "";
  return `tp ${layout.tp} × dp ${layout.dataParallel}${zero}, batch ${layout.batchPerGpu} per replica`;
}

function renderFitTable(rows: GpuFit[], minBatch: number | undefined): string {
  const header = ["id", "total", "max batch"];
  if (minBatch !== undefined) header.push(`GPUs for batch ${minBatch}`, "layout");
  const body = rows.map((r) => {
    const cells = [r.id, formatBytes(r.totalBytes), r.batchSize === 0 ? "does not fit" : String(r.batchSize)];
    if (minBatch !== undefined) cells.push(r.gpusNeeded == null ? "not reachable" : String(r.gpusNeeded), layoutText(r));
    return cells;
  });
  return renderTable(header, body);
}

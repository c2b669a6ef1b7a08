// `vramfit plan`: the memory breakdown of a workload at --batch N, a bar per category.
import { ASSUMED_CONTEXT_BYTES, CATALOG_DEVICE, plannedBytes } from "../fit/allocator.js";
import { ExitStatus } from "../errors.js";
import { CATEGORIES, bytesByCategory, planTotals, type Category } from "../plan/memoryPlan.js";
import { formatBytes, roundUp } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { renderTable } from "./table.js";
import { planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface PlanOptions extends WorkloadOptions {
  batch?: number;
  json?: boolean;
}

/** The `plan --json` object (DESIGN.md's contract, plus the description and assumptions). */
export interface PlanReport {
  batch: number;
  description: string;
  assumed: string[];
  parameterCount: number;
  /** Device bytes at the batch: every tensor rounded to 2 MiB, plus an assumed CUDA context. */
  totalBytes: number;
  breakdown: Record<Category | "context", number>;
  fixedBytes: number;
  perSampleBytes: number;
  tensorCount: number;
}

const BAR_WIDTH = 30;

function bar(share: number): string {
  const filled = Math.round(share * BAR_WIDTH);
  return "█".repeat(filled) + "·".repeat(BAR_WIDTH - filled);
}

export async function planCommand(options: PlanOptions, io: Io): Promise<number> {
  const { plan, assumed } = planFromOptions(options);
  const batch = options.batch ?? 1;
  if (options.batch === undefined) assumed.push("--batch 1");
  const report: PlanReport = {
    batch,
    description: plan.description,
    assumed,
    parameterCount: plan.parameterCount,
    totalBytes: plannedBytes(plan, batch, CATALOG_DEVICE),
    breakdown: {
      ...bytesByCategory(plan, batch, (bytes) => roundUp(bytes, CATALOG_DEVICE.granularityBytes)),
      context: ASSUMED_CONTEXT_BYTES,
    },
    ...planTotals(plan),
    tensorCount: plan.tensors.length,
  };
  if (options.json) {
    writeJson(io, report);
    return ExitStatus.ok;
  }
  io.out(`workload  ${plan.description}`);
  if (assumed.length > 0) io.out(`assumed   ${assumed.join(" ")}`);
  const rows = [...CATEGORIES, "context" as const].map((category) => {
    const bytes = report.breakdown[category];
    const share = bytes / report.totalBytes;
    return [category, formatBytes(bytes), bar(share), `${(100 * share).toFixed(1)}%`];
  });
  rows.push(["total", formatBytes(report.totalBytes), `at batch ${batch}`, ""]);
  io.out(renderTable(["category", "bytes", "", "share"], rows));
  return ExitStatus.ok;
}

// `vramfit batch`: the largest batch for a workload on each selected device or analytic target.
import { ExitStatus } from "../errors.js";
import { analyticBatch, deviceBatch, type BatchResult } from "../fit/findMaxBatch.js";
import { formatBytes } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { renderTable } from "./table.js";
import { resolveTargets, type TargetOptions } from "./targets.js";
import { planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface BatchOptions extends WorkloadOptions, TargetOptions {
  maxMem?: number;
  reserve?: number;
  maxBatch?: number;
  touch: boolean;
  json?: boolean;
}

export async function batchCommand(options: BatchOptions, io: Io): Promise<number> {
  const { plan, assumed } = planFromOptions(options);
  const limits = {
    ...(options.reserve !== undefined && { reserveBytes: options.reserve }),
    ...(options.maxMem !== undefined && { maxMemBytes: options.maxMem }),
    ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
  };
  const targets = await resolveTargets(options, "examples");
  let results: BatchResult[];
  if (targets.kind === "device") {
    const { addon } = targets;
    results = await Promise.all(targets.devices.map((d) => deviceBatch(addon, d, plan, { ...limits, touch: options.touch })));
  } else {
    results = await Promise.all(targets.targets.map((t) => analyticBatch(plan, t, limits, targets.reason)));
  }
  const many = options.device === "all" || (targets.kind === "analytic" && targets.fallback);

  if (options.json) {
    writeJson(io, many ? results : results[0]);
  } else {
    io.out(`workload  ${plan.description}${assumed.length > 0 ? ` (assumed ${assumed.join(" ")})` : ""}`);
    if (targets.kind === "analytic" && targets.fallback) {
      io.err(`${targets.reason}\nanalytic answers for common GPUs follow; name one with --gpu ID (see \`vramfit gpus\`) or --memory SIZE`);
    }
    io.out(renderBatchTable(results));
  }
  return results.some((r) => r.batchSize === 0) ? ExitStatus.doesNotFit : ExitStatus.ok;
}

function targetLabel(result: BatchResult): string {
  const { device } = result;
  if (device.ordinal !== null) return `${device.ordinal}: ${device.name}`;
  return device.id ?? device.name;
}

function renderBatchTable(results: BatchResult[]): string {
  const rows = results.map((r) => [
    targetLabel(r),
    r.source,
    formatBytes(r.device.freeBytes),
    formatBytes(r.budgetBytes),
    r.batchSize === 0 ? "does not fit" : String(r.batchSize),
    r.batchSize === 0 ? "-" : formatBytes(r.bytesAtBatch),
    r.source === "device" ? `${r.probes} (predicted ${r.predictedBatchSize})` : "-",
    `${r.elapsedMs.toFixed(r.elapsedMs < 10 ? 2 : 0)} ms`,
  ]);
  return renderTable(["target", "source", "free", "budget", "max batch", "uses", "probes", "time"], rows);
}

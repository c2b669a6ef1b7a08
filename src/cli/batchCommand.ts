// `vramfit batch`: the largest batch for a workload on each selected device or analytic target.
import { ExitStatus, invalidArgument } from "../errors.js";
import { analyticBatch, deviceBatch, type BatchResult } from "../fit/findMaxBatch.js";
import { formatDuration } from "../duration.js";
import { formatBytes } from "../units.js";
import type { Advice } from "../advice/advise.js";
import { perDevice } from "../devices/perDevice.js";
import { deviceAccess, warnIfBusy } from "./deviceAccess.js";
import { execBatchCommand } from "./execCommand.js";
import { hostBudget } from "./hostMemory.js";
import { integratedNotes } from "./integratedNote.js";
import { writeJson, type Io } from "./io.js";
import { cliProgress, showProbes } from "./progress.js";
import { renderTable } from "./table.js";
import { resolveTargets, type TargetOptions } from "./targets.js";
import { adviceFields, checkHost, describeHost, type HostCheck } from "./whenItDoesNotFit.js";
import { planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface BatchOptions extends WorkloadOptions, TargetOptions {
  maxMem?: number;
  reserve?: number;
  maxBatch?: number;
  touch: boolean;
  json?: boolean;
  minBatch?: number;
  hostMemory?: number;
  lockTimeout?: number;
  exec?: string;
  calibrate?: [number, number];
  runTimeout?: number;
  logDir?: string;
  /** `--solve seq`: the longest sequence at `batch` instead of the largest batch. */
  solve?: "batch" | "seq";
  /** With --solve seq, the batch the sequence must fit at. */
  batch?: number;
}

/** A batch answer's JSON: the library's result, the host side of --offload, and advice below --min-batch. */
type BatchReport = BatchResult & { host?: HostCheck; advice: Advice[]; adviceSummary?: string; adviceText?: string };

export async function batchCommand(options: BatchOptions, io: Io): Promise<number> {
  if (options.solve === "seq") return (await import("./solveSeqCommand.js")).solveSeqCommand(options, io);
  if (options.batch !== undefined) throw invalidArgument("--batch", options.batch, "--solve seq with it (batch finds the batch; check tests one)");
  if (options.exec !== undefined) return execBatchCommand({ ...options, exec: options.exec }, io);
  const planned = await planFromOptions(options, io.signal);
  const { plan, assumed } = planned;
  const limits = {
    ...(options.reserve !== undefined && { reserveBytes: options.reserve }),
    ...(options.maxMem !== undefined && { maxMemBytes: options.maxMem }),
    ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
  };
  const targets = await resolveTargets(options, "examples");
  let results: BatchResult[];
  if (targets.kind === "device") {
    const progress = cliProgress(io, options.json);
    const addon = showProbes(targets.addon, progress);
    const access = deviceAccess(options.lockTimeout, io);
    const busy = warnIfBusy(targets.devices, io).catch(() => undefined); // NVML only: no context for it
    // One search per device, all at once (a thread each in the addon); every one settles before any error is thrown.
    try {
      results = await perDevice(targets.devices, (d) => deviceBatch(addon, d, plan, { ...limits, ...access, touch: options.touch }));
    } finally {
      progress.done();
    }
    await busy;
  } else {
    results = await Promise.all(targets.targets.map((t) => analyticBatch(plan, t, limits, targets.reason)));
  }
  const many = options.device === "all" || (targets.kind === "analytic" && targets.fallback);
  const hostMemory = hostBudget(options.hostMemory);
  const host = checkHost(plan, hostMemory);
  const wanted = options.minBatch ?? 1;
  const reports: BatchReport[] = [];
  for (const [i, r] of results.entries()) {
    const report: BatchReport = { ...r, ...(host !== undefined && { host }), advice: [] };
    if (r.batchSize < wanted) {
      const adviceOptions = {
        limits,
        touch: options.touch,
        ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
        ...(hostMemory !== undefined && { hostBudget: hostMemory }),
        ...(targets.kind === "device" && { access: deviceAccess(options.lockTimeout, io) }),
        ...(io.signal !== undefined && { signal: io.signal }),
      };
      Object.assign(report, await adviceFields(planned, targets, i, r.budgetBytes, wanted, adviceOptions, targetLabel(r), r.batchSize));
    }
    reports.push(report);
  }

  if (options.json) {
    const json = reports.map(({ adviceText: _, ...r }) => r);
    writeJson(io, many ? json : json[0]);
  } else {
    io.out(`workload  ${plan.description}${assumed.length > 0 ? ` (assumed ${assumed.join(" ")})` : ""}`);
    if (targets.kind === "analytic" && targets.fallback) {
      io.err(`${targets.reason}\nanalytic answers for common GPUs follow; name one with --gpu ID (see \`vramfit gpus\`) or --memory SIZE`);
    }
    io.out(renderBatchTable(results));
    if (targets.kind === "device") for (const note of integratedNotes(targets.devices)) io.err(note);
    if (host !== undefined) io.out(`host      ${describeHost(host)}`);
    for (const r of reports) if (r.adviceText !== undefined) io.out(r.adviceText);
  }
  const short = results.some((r) => r.batchSize === 0 || r.batchSize < wanted) || host?.fits === false;
  return short ? ExitStatus.doesNotFit : ExitStatus.ok;
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
    formatDuration(r.elapsedMs),
  ]);
  return renderTable(["target", "source", "free", "budget", "max batch", "uses", "probes", "time"], rows);
}

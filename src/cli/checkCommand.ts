// `vramfit check`: does a workload at --batch N, or a raw --need SIZE, fit? Exit 0 or 1.
import { ExitStatus, invalidArgument } from "../errors.js";
import { checkAnalytic, needPlan, type CheckResult } from "../fit/checkFits.js";
import { checkBatchBytes } from "../plan/planLimits.js";
import { formatBytes } from "../units.js";
import type { Advice } from "../advice/advise.js";
import { checkDevices, deviceAccess } from "./deviceAccess.js";
import { execCheckCommand } from "./execCommand.js";
import { hostBudget } from "./hostMemory.js";
import { integratedNotes } from "./integratedNote.js";
import { writeJson, type Io } from "./io.js";
import { cliProgress, showProbes } from "./progress.js";
import { resolveTargets, type TargetOptions } from "./targets.js";
import { adviceFields, checkHost, describeHost, type HostCheck } from "./whenItDoesNotFit.js";
import { planFromOptions, type PlannedWorkload, type WorkloadOptions } from "./workloadOptions.js";

export interface CheckOptions extends WorkloadOptions, TargetOptions {
  batch?: number;
  need?: number;
  maxMem?: number;
  reserve?: number;
  touch: boolean;
  json?: boolean;
  hostMemory?: number;
  lockTimeout?: number;
  exec?: string;
  runTimeout?: number;
  logDir?: string;
}

/** A check's JSON: the library's result, with the host side of --offload and the advice when it does not fit. */
type CheckReport = CheckResult & { gpuFits: boolean; host?: HostCheck; advice: Advice[]; adviceSummary?: string; adviceText?: string };

async function checkedPlan(options: CheckOptions, signal?: AbortSignal): Promise<{ plan: ReturnType<typeof needPlan>; batch: number; planned?: PlannedWorkload }> {
  if (options.need !== undefined) {
    const workloadGiven = [options.model, options.hfConfig, options.spec, options.params].some((o) => o !== undefined);
    if (workloadGiven || options.batch !== undefined) {
      throw invalidArgument("--need", options.need, "either --need SIZE or a workload with --batch N, not both");
    }
    return { plan: needPlan(options.need), batch: 0 };
  }
  if (options.batch === undefined) throw invalidArgument("--batch", "none", "the batch size to check (or --need SIZE)");
  const planned = await planFromOptions(options, signal);
  checkBatchBytes("--batch", planned.plan, options.batch);
  return { plan: planned.plan, batch: options.batch, planned };
}

export async function checkCommand(options: CheckOptions, io: Io): Promise<number> {
  if (options.exec !== undefined) return execCheckCommand({ ...options, exec: options.exec }, io);
  const { plan, batch, planned } = await checkedPlan(options, io.signal);
  const limits = {
    ...(options.reserve !== undefined && { reserveBytes: options.reserve }),
    ...(options.maxMem !== undefined && { maxMemBytes: options.maxMem }),
  };
  const targets = await resolveTargets(options, "refuse");
  const progress = cliProgress(io, options.json);
  let results: CheckResult[];
  try {
    results =
      targets.kind === "device"
        ? await checkDevices(showProbes(targets.addon, progress), targets.devices, plan, batch, { limits, touch: options.touch, lockTimeoutMs: options.lockTimeout, needOnly: options.need !== undefined }, io)
        : await Promise.all(targets.targets.map((t) => checkAnalytic(plan, batch, t, limits, targets.reason)));
  } finally {
    progress.done();
  }
  const hostMemory = hostBudget(options.hostMemory);
  const host = checkHost(plan, hostMemory);
  const reports: CheckReport[] = [];
  for (const [i, r] of results.entries()) {
    const report: CheckReport = { ...r, fits: r.fits && host?.fits !== false, gpuFits: r.fits, ...(host !== undefined && { host }), advice: [] };
    if (!r.fits && planned !== undefined) {
      const adviceOptions = {
        limits,
        touch: options.touch,
        ...(hostMemory !== undefined && { hostBudget: hostMemory }),
        ...(targets.kind === "device" && { access: deviceAccess(options.lockTimeout, io) }),
        ...(io.signal !== undefined && { signal: io.signal }),
      };
      Object.assign(report, await adviceFields(planned, targets, i, r.budgetBytes, batch, adviceOptions, where(r)));
    }
    reports.push(report);
  }

  if (options.json) {
    const json = reports.map(({ adviceText: _, ...r }) => r);
    writeJson(io, options.device === "all" ? json : json[0]);
  } else {
    for (const r of reports) {
      if (r.host === undefined) io.out(describeCheck(r));
      else io.out(`${r.fits ? "fits" : `does not fit (${!r.gpuFits && r.host.fits === false ? "GPU and host memory" : r.gpuFits ? "host memory" : "GPU memory"})`}\n  GPU   ${describeCheck({ ...r, fits: r.gpuFits })}\n  host  ${describeHost(r.host)}`);
      if (r.adviceText !== undefined) io.out(r.adviceText);
    }
  }
  if (!options.json && targets.kind === "device") for (const note of integratedNotes(targets.devices)) io.err(note);
  return reports.every((r) => r.fits) ? ExitStatus.ok : ExitStatus.doesNotFit;
}

function where(r: CheckResult): string {
  return r.device.ordinal !== null ? `device ${r.device.ordinal} (${r.device.name})` : (r.device.id ?? r.device.name);
}

function describeCheck(r: CheckResult): string {
  const verdict = r.fits ? "fits" : "does not fit";
  return `${verdict}: needs ${formatBytes(r.needBytes)} of a ${formatBytes(r.budgetBytes)} budget on ${where(r)} [${r.source}]`;
}

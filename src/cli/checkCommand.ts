// `vramfit check`: does a workload at --batch N, or a raw --need SIZE, fit? Exit 0 or 1.
import { ExitStatus, invalidArgument } from "../errors.js";
import { checkAnalytic, checkOnDevice, needPlan, type CheckResult } from "../fit/checkFits.js";
import { formatBytes } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { resolveTargets, type TargetOptions } from "./targets.js";
import { planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface CheckOptions extends WorkloadOptions, TargetOptions {
  batch?: number;
  need?: number;
  maxMem?: number;
  reserve?: number;
  touch: boolean;
  json?: boolean;
}

function checkedPlan(options: CheckOptions): { plan: ReturnType<typeof needPlan>; batch: number } {
  if (options.need !== undefined) {
    const workloadGiven = [options.model, options.hfConfig, options.spec, options.params].some((o) => o !== undefined);
    if (workloadGiven || options.batch !== undefined) {
      throw invalidArgument("--need", options.need, "either --need SIZE or a workload with --batch N, not both");
    }
    return { plan: needPlan(options.need), batch: 0 };
  }
  if (options.batch === undefined) throw invalidArgument("--batch", "none", "the batch size to check (or --need SIZE)");
  return { plan: planFromOptions(options).plan, batch: options.batch };
}

export async function checkCommand(options: CheckOptions, io: Io): Promise<number> {
  const { plan, batch } = checkedPlan(options);
  const limits = {
    ...(options.reserve !== undefined && { reserveBytes: options.reserve }),
    ...(options.maxMem !== undefined && { maxMemBytes: options.maxMem }),
  };
  const targets = await resolveTargets(options, "refuse");
  const results: CheckResult[] =
    targets.kind === "device"
      ? await Promise.all(targets.devices.map((d) => checkOnDevice(targets.addon, d, plan, batch, { ...limits, touch: options.touch })))
      : await Promise.all(targets.targets.map((t) => checkAnalytic(plan, batch, t, limits, targets.reason)));

  if (options.json) {
    writeJson(io, options.device === "all" ? results : results[0]);
  } else {
    for (const r of results) io.out(describeCheck(r));
  }
  return results.every((r) => r.fits) ? ExitStatus.ok : ExitStatus.doesNotFit;
}

function describeCheck(r: CheckResult): string {
  const where = r.device.ordinal !== null ? `device ${r.device.ordinal} (${r.device.name})` : (r.device.id ?? r.device.name);
  const verdict = r.fits ? "fits" : "does not fit";
  return `${verdict}: needs ${formatBytes(r.needBytes)} of a ${formatBytes(r.budgetBytes)} budget on ${where} [${r.source}]`;
}

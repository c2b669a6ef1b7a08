// `vramfit check`: does a workload at --batch N, or a raw --need SIZE, fit? Exit 0 or 1.
import { invalidArgument } from "../errors.js";
import { checkFits, formatBytes, releaseDevices, type CheckResult } from "../index.js";
import { formatBytesApart } from "../units.js";
import type { Advice } from "../advice/advise.js";
import { allowedMemoryBytes, parseAllocConf } from "../fit/allocConf.js";
import { needPlan } from "../fit/checkFits.js";
import { checkBatchBytes } from "../plan/planLimits.js";
import { deviceAccess } from "./deviceAccess.js";
import { execCheckCommand } from "./execCommand.js";
import { evaluateEach, exitStatusOfOutcomes, failedDevice, type FailedDevice } from "./failedDevices.js";
import { hostBudget } from "./hostMemory.js";
import { deviceList, integratedNotes } from "./integratedNote.js";
import { writeJson, type Io } from "./io.js";
import { allocConfLine, jobLimits, type JobOptions } from "./jobOptions.js";
import { asLongRun } from "./longRun.js";
import { cliProgress, showProbes } from "./progress.js";
import { resolveCliTargets, type TargetOptions } from "./targets.js";
import { adviceFields, allAdvice, checkHost, describeHost, type HostCheck } from "./whenItDoesNotFit.js";
import { TRACED_ADVICE, answersOnlyAtItsBatch, isTraced, planFromOptions, type Planned, type WorkloadOptions } from "./workloadOptions.js";

export interface CheckOptions extends WorkloadOptions, TargetOptions, JobOptions {
  batch?: number;
  need?: number;
  touch: boolean;
  /** false with `--no-advice`: a check that does not fit gets no advice. */
  advice?: boolean;
  json?: boolean;
  hostMemory?: number;
  lockTimeout?: number;
  exec?: string;
  runTimeout?: number;
  logDir?: string;
}

/** A check's JSON: the library's result, with the host side of --offload and the advice when it does not fit. */
type CheckReport = CheckResult & { gpuFits: boolean; host?: HostCheck; advice: Advice[]; adviceSummary?: string; adviceText?: string };

async function checkedPlan(options: CheckOptions, signal?: AbortSignal): Promise<{ plan: ReturnType<typeof needPlan>; batch: number; planned?: Planned }> {
  if (options.need !== undefined) {
    const workloadGiven = [options.model, options.hfConfig, options.spec, options.params, options.trace].some((o) => o !== undefined);
    if (workloadGiven || options.batch !== undefined) {
      throw invalidArgument("--need", options.need, "either --need SIZE or a workload with --batch N, not both");
    }
    return { plan: needPlan(options.need), batch: 0 };
  }
  if (options.batch === undefined) throw invalidArgument("--batch", "none", "the batch size to check (or --need SIZE)");
  const planned = await planFromOptions(options, signal);
  if (isTraced(planned)) answersOnlyAtItsBatch(planned, options.batch);
  checkBatchBytes("--batch", planned.plan, options.batch);
  return { plan: planned.plan, batch: options.batch, planned };
}

export async function checkCommand(options: CheckOptions, io: Io): Promise<number> {
  if (options.exec !== undefined) return execCheckCommand({ ...options, exec: options.exec }, io);
  // The plan, its replays at the batch and, where it does not fit, advice: V8 tiered for a long run (src/cli/longRun.ts).
  return asLongRun(() => checkModelled(options, io));
}

async function checkModelled(options: CheckOptions, io: Io): Promise<number> {
  const { plan, batch, planned } = await checkedPlan(options, io.signal);
  const limits = jobLimits(options, planned);
  const { targets } = await resolveCliTargets(options, "refuse");
  const progress = cliProgress(io, options.json);
  const onProbe = showProbes(progress);
  const access = deviceAccess(options.lockTimeout, io);
  try {
    let outcomes;
    try {
      // --need asks only "is that much free?", which NVML answers without a context (hundreds of
      // MiB, on a GPU that may be nearly full); a device NVML cannot read, and every workload, gets one probe.
      outcomes = await evaluateEach(targets, (target) =>
        checkFits(plan, batch, { ...limits, ...access, touch: options.touch, keepWarm: true, withoutContext: options.need !== undefined, target, ...(onProbe !== undefined && { onProbe }) }),
      );
    } finally {
      progress.done();
    }
    const hostMemory = hostBudget(options.hostMemory);
    const host = checkHost(plan, hostMemory);
    const rows: (CheckReport | FailedDevice)[] = [];
    const advising: Promise<unknown>[] = [];
    for (const [i, outcome] of outcomes.entries()) {
      if (!outcome.ok) {
        rows.push(failedDevice(targets[i]!, outcome.error));
        continue;
      }
      const r = outcome.value;
      const report: CheckReport = { ...r, fits: r.fits && host?.fits !== false, gpuFits: r.fits, ...(host !== undefined && { host }), advice: [] };
      if (!r.fits && planned !== undefined && options.advice !== false && isTraced(planned)) report.adviceText = TRACED_ADVICE;
      else if (!r.fits && planned !== undefined && options.advice !== false && !isTraced(planned)) {
        const adviceOptions = {
          limits,
          touch: options.touch,
          ...(hostMemory !== undefined && { hostBudget: hostMemory }),
          ...(targets[i]!.kind === "device" && { access }),
          ...(io.signal !== undefined && { signal: io.signal }),
        };
        advising.push(adviceFields(planned, targets[i]!, r, batch, adviceOptions, where(r)).then((fields) => Object.assign(report, fields)));
      }
      rows.push(report);
    }
    await allAdvice(advising);

    if (options.json) {
      const json = rows.map((r) => ("error" in r ? r : (({ adviceText: _, ...rest }) => rest)(r)));
      writeJson(io, options.device === "all" ? json : json[0]);
    } else {
      for (const r of rows) {
        if ("error" in r) io.out(`error: ${r.error.message}`);
        else if (r.host === undefined) io.out(describeCheck(r));
        else io.out(`${r.fits ? "fits" : `does not fit (${!r.gpuFits && r.host.fits === false ? "GPU and host memory" : r.gpuFits ? "host memory" : "GPU memory"})`}\n  GPU   ${describeCheck({ ...r, fits: r.gpuFits })}\n  host  ${describeHost(r.host)}`);
        if (!("error" in r) && r.adviceText !== undefined) io.out(r.adviceText);
      }
      const allocatorLine = allocConfLine(options);
      if (allocatorLine !== undefined) io.out(allocatorLine);
    }
    if (!options.json) for (const note of integratedNotes(deviceList(targets))) io.err(note);
    const answered = rows.filter((r): r is CheckReport => !("error" in r));
    return exitStatusOfOutcomes(answered.some((r) => !r.fits), answered.length < rows.length);
  } finally {
    if (targets.some((t) => t.kind === "device")) await releaseDevices();
  }
}

function where(r: CheckResult): string {
  return r.device.ordinal !== null ? `device ${r.device.ordinal} (${r.device.name})` : (r.device.id ?? r.device.name);
}

function describeCheck(r: CheckResult): string {
  const verdict = r.fits ? "fits" : "does not fit";
  const [need, budget] = formatBytesApart(r.needBytes, r.budgetBytes);
  // Where the job's memory fraction stopped it, the budget alone does not say why.
  const allowed = r.fits || r.allocConf === "" ? Number.POSITIVE_INFINITY : allowedMemoryBytes(parseAllocConf(r.allocConf), r.device.totalBytes);
  const cap = allowed === Number.POSITIVE_INFINITY ? "" : `, where per_process_memory_fraction lets PyTorch's allocator reserve ${formatBytes(allowed)}`;
  return `${verdict}: needs ${need} of a ${budget} budget on ${where(r)} [${r.source}]${cap}`;
}

// `vramfit batch`: the largest batch for a workload on each selected device or analytic target.
import { invalidArgument } from "../errors.js";
import { findMaxBatch, formatBytes, releaseDevices, type BatchResult, type Target } from "../index.js";
import { answerTogether, eachTogether, forEachMember } from "../fit/deviceGroup.js";
import type { DeviceAccessOptions } from "../fit/deviceMemory.js";
import { deviceSummary, type DeviceTarget } from "../fit/target.js";
import type { Advice } from "../advice/advise.js";
import { formatDuration } from "../duration.js";
import { deviceAccess, warnIfBusy } from "./deviceAccess.js";
import { execBatchCommand } from "./execCommand.js";
import { evaluateAll, exitStatusOfOutcomes, failedDevice, type FailedDevice } from "./failedDevices.js";
import { hostBudget } from "./hostMemory.js";
import { deviceList, integratedNotes } from "./integratedNote.js";
import { writeJson, type Io } from "./io.js";
import type { BatchOptions } from "./batchOptions.js";
import { allocConfLine, jobLimits, reserveText } from "./jobOptions.js";
import { cliProgress, showProbes } from "./progress.js";
import { BUDGET_HEADER, budgetCells } from "./budgetCells.js";
import { renderTable } from "./table.js";
import { resolveCliTargets } from "./targets.js";
import { adviceFieldsOn, allAdvice, checkHost, describeHost, type HostCheck } from "./whenItDoesNotFit.js";
import { TRACED_ADVICE, answersOnlyAtItsBatch, isTraced, planFromOptions } from "./workloadOptions.js";

/** A batch answer's JSON: the library's result, the host side of --offload, and advice below --min-batch. */
type BatchReport = BatchResult & { host?: HostCheck; advice: Advice[]; adviceSummary?: string; adviceText?: string };

export async function batchCommand(options: BatchOptions, io: Io): Promise<number> {
  if (options.solve === "seq") return (await import("./solveSeqCommand.js")).solveSeqCommand(options, io);
  if (options.batch !== undefined) throw invalidArgument("--batch", options.batch, "--solve seq with it (batch finds the batch; check tests one)");
  if (options.exec !== undefined) return execBatchCommand({ ...options, exec: options.exec }, io);
  const planned = await planFromOptions(options, io.signal);
  if (isTraced(planned)) answersOnlyAtItsBatch(planned, undefined);
  const { plan, assumed } = planned;
  const limits = { ...jobLimits(options, planned), ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }) };
  const { targets, fallback, reason } = await resolveCliTargets(options, "examples");
  try {
    return await answer();
  } finally {
    // Every search kept its context warm for the next (advice probes too); none outlives the command.
    if (targets.some((t) => t.kind === "device")) await releaseDevices();
  }

  async function answer(): Promise<number> {
    const progress = cliProgress(io, options.json);
    const onProbe = showProbes(progress);
    const access = deviceAccess(options.lockTimeout, io);
    const busy = warnIfBusy(targets, reserveText(options), io).catch(() => undefined); // NVML only: no context for it
    let outcomes;
    try {
      // One search per target, all at once (a thread per device in the addon); a failing device
      // gives an error row. Identical devices search together: each probe on all of them at once.
      const search = (target: Target, on: DeviceAccessOptions = access, members: readonly DeviceTarget[] = []) =>
        findMaxBatch(plan, { ...limits, ...on, touch: options.touch, keepWarm: true, target, ...(onProbe !== undefined && { onProbe: forEachMember(onProbe, members) }) });
      outcomes = await evaluateAll(
        eachTogether(targets, (i) => search(targets[i]!), (members) =>
          answerTogether(members, access, (group, on) => search(group, on, members), (m) => search(m), (r, m) => ({ ...r, device: deviceSummary(m.device, r.device.freeBytes) })),
        ),
      );
    } finally {
      progress.done();
    }
    await busy;
    const many = options.device === "all" || fallback;
    const wanted = options.minBatch ?? 1;
    // Host memory matters to a plan with offloaded states and to advice (a batch short of the one
    // wanted): only then is /proc/meminfo read (some 0.3-0.5 ms of a run that needs neither).
    const hostMatters = plan.host !== undefined || outcomes.some((outcome) => outcome.ok && outcome.value.batchSize < wanted);
    const hostMemory = hostMatters ? hostBudget(options.hostMemory) : undefined;
    const host = checkHost(plan, hostMemory);
    const rows: (BatchReport | FailedDevice)[] = [];
    const advised: number[] = []; // the targets whose answer gets advice, by index
    for (const [i, outcome] of outcomes.entries()) {
      if (!outcome.ok) {
        rows.push(failedDevice(targets[i]!, outcome.error));
        continue;
      }
      const r = outcome.value;
      const report: BatchReport = { ...r, ...(host !== undefined && { host }), advice: [] };
      if (r.batchSize < wanted && options.advice !== false && isTraced(planned)) report.adviceText = TRACED_ADVICE;
      else if (r.batchSize < wanted && options.advice !== false && !isTraced(planned)) advised.push(i);
      rows.push(report);
    }
    if (advised.length > 0 && !isTraced(planned)) {
      const adviceOptions = (target: Target, on: DeviceAccessOptions) => ({
        limits,
        touch: options.touch,
        ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
        ...(hostMemory !== undefined && { hostBudget: hostMemory }),
        ...(target.kind === "device" && { access: on }),
        ...(io.signal !== undefined && { signal: io.signal }),
      });
      const reportOf = (k: number) => rows[advised[k]!] as BatchReport;
      const adviseOn = (target: Target, r: BatchReport, on: DeviceAccessOptions = access) => adviceFieldsOn(planned, target, r, wanted, adviceOptions(target, on), r.batchSize);
      // Identical devices with equal answers share one advice, its measurements made on each of them at once.
      const advice = eachTogether(
        advised.map((i) => targets[i]!),
        (k) => adviseOn(targets[advised[k]!]!, reportOf(k)),
        (members, ks) => answerTogether(members, access, (group, on) => adviseOn(group, reportOf(ks[0]!), on), (m) => adviseOn(m, reportOf(ks[members.indexOf(m)]!)), (fields) => fields),
        (k) => answerKey(reportOf(k)),
      );
      await allAdvice(advice.map((fields, k) => fields.then((f) => Object.assign(reportOf(k), f(targetLabel(reportOf(k).device))))));
    }

    if (options.json) {
      const json = rows.map((r) => ("error" in r ? r : (({ adviceText: _, ...rest }) => rest)(r)));
      writeJson(io, many ? json : json[0]);
    } else {
      io.out(`workload  ${plan.description}${assumed.length > 0 ? ` (assumed ${assumed.join(" ")})` : ""}`);
      const allocatorLine = allocConfLine(options);
      if (allocatorLine !== undefined) io.out(allocatorLine);
      if (fallback) {
        io.err(`${reason}\nanalytic answers for common GPUs follow; name one with --gpu ID (see \`vramfit gpus\`) or --memory SIZE`);
      }
      io.out(renderBatchTable(rows));
      for (const r of rows) if ("error" in r) io.out(`error     ${r.error.message}`);
      if (host !== undefined) io.out(`host      ${describeHost(host)}`);
      for (const r of rows) if (!("error" in r) && r.adviceText !== undefined) io.out(r.adviceText);
      for (const note of integratedNotes(deviceList(targets))) io.err(note);
    }
    const answered = rows.filter((r): r is BatchReport => !("error" in r));
    const short = answered.some((r) => r.batchSize === 0 || r.batchSize < wanted) || host?.fits === false;
    return exitStatusOfOutcomes(short, answered.length < rows.length);
  }
}

/** What advice depends on in an answer: all of it but the device's ordinal, UUID, and the time taken. */
function answerKey(r: BatchReport): string {
  return JSON.stringify({ ...r, device: r.device.freeBytes, elapsedMs: 0 });
}

function targetLabel(device: FailedDevice["device"] | BatchResult["device"]): string {
  if (device.ordinal !== null) return `${device.ordinal}: ${device.name}`;
  return ("id" in device ? device.id : undefined) ?? device.name;
}

function renderBatchTable(rows: (BatchReport | FailedDevice)[]): string {
  const body = rows.map((r) => {
    if ("error" in r) return [targetLabel(r.device), "failed", "-", "-", "-", r.error.code, "-", "-", "-"];
    return [
      targetLabel(r.device),
      r.source,
      ...budgetCells(r),
      r.batchSize === 0 ? "does not fit" : String(r.batchSize),
      r.batchSize === 0 ? "-" : formatBytes(r.bytesAtBatch),
      r.source === "device" ? `${r.probes} (predicted ${r.predictedBatchSize})` : "-",
      formatDuration(r.elapsedMs),
    ];
  });
  return renderTable(["target", "source", ...BUDGET_HEADER, "max batch", "uses", "probes", "time"], body);
}


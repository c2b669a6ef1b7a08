// `vramfit plan`: the memory breakdown of a workload at --batch N, a bar per category; with a target, its largest batch, and --svg a chart.
import { ExitStatus } from "../errors.js";
import { checkBatchBytes } from "../plan/planLimits.js";
import { jobModel } from "../fit/charges.js";
import { modelled } from "../fit/findMaxBatch.js";
import type { AllocatorModel } from "../fit/allocator.js";
import { eventsLog } from "../step/eventsFile.js";
import { CATEGORIES, hostBytes, hostBytesByCategory, peakPhase, phasesOf, planTotals, type Category } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import { writeFileSync } from "node:fs";
import { invalidArgument } from "../errors.js";
import { writeJson, type Io } from "./io.js";
import { planHighlights, type PlanHighlight } from "../plan/highlights.js";
import { firstLayerTensors, tensorSums, type TensorSums } from "../plan/tensorSums.js";
import { memoryChartSvg } from "./memoryChart.js";
import { allocConfLine, jobAllocConf, jobLimits, type JobOptions } from "./jobOptions.js";
import { deviceBreakdown, type Breakdown } from "./memoryChart.js";
import { planTimeline, timelineTable, type TimelinePoint } from "./planTimeline.js";
import { timelineChartSvg } from "./timelineChart.js";
import { hasPlanTarget, planTarget, type PlanTarget } from "./planTarget.js";
import { renderTable } from "./table.js";
import type { TargetOptions } from "./targets.js";
import { answersOnlyAtItsBatch, isTraced, planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface PlanOptions extends WorkloadOptions, TargetOptions, JobOptions {
  batch?: number;
  json?: boolean;
  /** Write the chart of memory against batch size here (with --timeline: the step's phases). */
  svg?: string;
  /** Show what is live in each phase of the step. */
  timeline?: boolean;
  /** Write the step's allocation events at the batch here (`a ID BYTES` / `f ID`). */
  events?: string;
}

/** The `plan --json` object (DESIGN.md's contract, plus the description and assumptions). */
export interface PlanReport {
  batch: number;
  description: string;
  assumed: string[];
  parameterCount: number;
  /** Parameters that train: the adapters with --lora-rank, otherwise parameterCount. */
  trainableParameterCount: number;
  /** Device bytes at the batch: the segments the job's allocator holds at its peak, and the job's CUDA context. */
  totalBytes: number;
  /**
   * totalBytes by category: each category's tensors live at the peak (unrounded), `allocator`
   * (what the allocator holds beyond them: rounding, segment tails, cached free blocks) and `context`.
   */
  breakdown: Breakdown;
  /** The allocator the job was modelled with. */
  allocator: string;
  /** The PYTORCH_CUDA_ALLOC_CONF modelled, only what differs from PyTorch's defaults ("" for none). */
  allocConf: string;
  /** The phase of the step whose live tensors the breakdown shows: the peak at this batch (`step` for a plan without a timeline). */
  peakPhase: string;
  /** With --timeline: every phase's live bytes (as planned, before allocator rounding), in step order. */
  timeline?: TimelinePoint[];
  fixedBytes: number;
  perSampleBytes: number;
  tensorCount: number;
  /**
   * Every tensor of the step summed by category (`fixedBytes`, `perSampleBytes`), whatever its
   * lifetime, unlike `breakdown` (what is live at the peak): `step` over the whole plan, and for a
   * transformer `firstLayer` over its first layer's tensors (`layers.0.…`; full recomputation's
   * re-run set excluded). What papers' per-sample and per-layer activation counts compare with.
   */
  tensorSums: { step: TensorSums; firstLayer?: TensorSums };
  /** The attention kernel every transformer layer is planned with (`--attention`, or SDPA's choice); absent without attention. */
  attentionKernel?: string;
  /** Named parts of the breakdown (frozen weights, adapters, dequantization buffer, …), unrounded like its categories; empty when none applies. */
  highlights: PlanHighlight[];
  /** Host memory of offloaded states on one node (`--offload`; 0 without), not rounded. */
  hostBytes: number;
  /** hostBytes by category (parameters, gradients, optimizerStates; 0 where nothing is offloaded), and the ranks sharing the host. */
  host: { parameters: number; gradients: number; optimizerStates: number; ranks: number };
  /** With a target (--gpu, --memory, --device, or a GPU for --svg): its budget and the model's largest batch in it. */
  target?: Omit<PlanTarget, "allocator">;
}

const BAR_WIDTH = 30;

function bar(share: number): string {
  const filled = Math.round(share * BAR_WIDTH);
  return "█".repeat(filled) + "·".repeat(BAR_WIDTH - filled);
}

export async function planCommand(options: PlanOptions, io: Io): Promise<number> {
  const planned = await planFromOptions(options, io.signal);
  const { plan, assumed } = planned;
  const limits = jobLimits(options, planned);
  const model = jobModel(limits);
  // A trace that is not affine answers at its one traced batch.
  const batch = options.batch ?? (isTraced(planned) && !planned.trace.affine ? planned.trace.batches[0]! : 1);
  if (isTraced(planned)) answersOnlyAtItsBatch(planned, batch);
  checkBatchBytes("--batch", plan, batch);
  if (options.batch === undefined) assumed.push(`--batch ${batch}`);
  const report: PlanReport = {
    batch,
    description: plan.description,
    assumed,
    parameterCount: plan.parameterCount,
    trainableParameterCount: plan.trainableParameterCount ?? plan.parameterCount,
    totalBytes: 0,
    breakdown: deviceBreakdown(plan, batch, model),
    ...modelled(model),
    peakPhase: phasesOf(plan)[peakPhase(plan, batch)]!,
    ...(options.timeline && { timeline: planTimeline(plan, batch) }),
    ...planTotals(plan),
    tensorCount: plan.tensors.length,
    tensorSums: {
      step: tensorSums(plan.tensors),
      ...(!isTraced(planned) && planned.workload.kind === "transformer" && { firstLayer: tensorSums(firstLayerTensors(plan.tensors)) }),
    },
    ...(plan.attentionKernel !== undefined && { attentionKernel: plan.attentionKernel }),
    highlights: planHighlights(plan, batch),
    hostBytes: hostBytes(plan),
    host: (({ parameters, gradients, optimizerStates }) => ({ parameters, gradients, optimizerStates, ranks: plan.host?.ranks ?? 0 }))(hostBytesByCategory(plan)),
  };
  report.totalBytes = Object.values(report.breakdown).reduce((sum, bytes) => sum + bytes, 0);
  const target = (options.svg !== undefined && !options.timeline) || hasPlanTarget(options) ? await planTarget(plan, options, limits) : undefined;
  if (target !== undefined) {
    const { allocator, ...shown } = target;
    report.target = shown;
    if (options.svg !== undefined && !options.timeline) {
      const chart = { plan, allocator, budgetBytes: target.budgetBytes, budgetLabel: target.budgetLabel, maxBatch: target.maxBatch };
      writeChart(options.svg, memoryChartSvg({ ...chart, ...(options.batch !== undefined && { batch: options.batch }) }));
    }
  }
  if (options.svg !== undefined && report.timeline !== undefined) {
    const budget = target !== undefined ? { bytes: target.budgetBytes, label: target.budgetLabel } : undefined;
    writeChart(options.svg, timelineChartSvg({ description: plan.description, batch, points: report.timeline, ...(budget && { budget }) }));
  }
  if (options.events !== undefined) writeEvents(options.events, eventsLog(plan, batch, eventsHeader(report, model, options)));
  if (options.json) {
    writeJson(io, report);
    return ExitStatus.ok;
  }
  io.out(`workload  ${plan.description}`);
  const allocatorLine = allocConfLine(options);
  if (allocatorLine !== undefined) io.out(allocatorLine);
  if (assumed.length > 0) io.out(`assumed   ${assumed.join(" ")}`);
  const rows = [...CATEGORIES, "allocator" as const, "context" as const].map((category) => {
    const bytes = report.breakdown[category];
    const share = bytes / report.totalBytes;
    return [category, formatBytes(bytes), bar(share), `${(100 * share).toFixed(1)}%`];
  });
  rows.push(["total", formatBytes(report.totalBytes), `at batch ${batch}`, ""]);
  io.out(renderTable(["category", "bytes", "", "share"], rows));
  if (phasesOf(plan).length > 1) io.out(`peak      in ${report.peakPhase}`);
  if (plan.attentionKernel !== undefined) io.out(`attention ${plan.attentionKernel} in every layer${options.attention === undefined || options.attention === "sdpa" ? " (PyTorch SDPA's choice for this dtype, head size and GPU; --attention names one)" : ""}`);
  if (report.highlights.length > 0) {
    io.out(`\n${renderTable(["of which", "bytes", ""], report.highlights.map((h) => [h.part, formatBytes(h.bytes), h.detail]))}`);
  }
  if (report.timeline !== undefined) io.out(`\n${timelineTable(report.timeline)}`);
  if (report.hostBytes > 0) {
    const hostRows = (["parameters", "gradients", "optimizerStates"] as const).map((category) => {
      const share = report.host[category] / report.hostBytes;
      return [category, formatBytes(report.host[category]), bar(share), `${(100 * share).toFixed(1)}%`];
    });
    const ranks = report.host.ranks > 1 ? `, ${report.host.ranks} GPUs' shares` : "";
    hostRows.push(["total", formatBytes(report.hostBytes), `host memory, offloaded${ranks}`, ""]);
    io.out(`\n${renderTable(["host", "bytes", "", "share"], hostRows)}`);
  }
  if (target !== undefined) {
    const answer = target.maxBatch === 0 ? "not even batch 1 fits" : `largest batch ${target.maxBatch}`;
    io.out(`target    ${target.name}: ${answer} within a ${formatBytes(target.budgetBytes)} budget (the model's answer; \`vramfit batch\` probes it)`);
  }
  if (options.svg !== undefined) io.out(`chart     ${options.svg}`);
  if (options.events !== undefined) io.out(`events    ${options.events}`);
  return ExitStatus.ok;
}

/** The events log's header: what was planned, and how the job allocates. */
function eventsHeader(report: PlanReport, model: AllocatorModel, options: PlanOptions): [string, string][] {
  const conf = jobAllocConf(options);
  return [
    ["workload", report.description],
    ...(report.assumed.length > 0 ? [["assumed", report.assumed.join(" ")] as [string, string]] : []),
    ["batch", String(report.batch)],
    ["parameters", String(report.parameterCount)],
    ["tensors", String(report.tensorCount)],
    ["allocator", model.kind],
    ["PYTORCH_CUDA_ALLOC_CONF", conf === undefined ? "" : `${conf.text} (from ${conf.from})`],
    ["job context bytes", String(model.contextBytes)],
  ];
}

function writeEvents(path: string, text: string): void {
  try {
    writeFileSync(path, text);
  } catch (error) {
    throw invalidArgument("--events", path, `a file that can be written (${(error as NodeJS.ErrnoException).code ?? "write failed"})`);
  }
}

function writeChart(path: string, svg: string): void {
  try {
    writeFileSync(path, svg);
  } catch (error) {
    throw invalidArgument("--svg", path, `a file that can be written (${(error as NodeJS.ErrnoException).code ?? "write failed"})`);
  }
}

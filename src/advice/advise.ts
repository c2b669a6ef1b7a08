// Quantified advice when a workload does not fit: each change measured by the same model (and probe), ranked by cost.
import { GPU_CATALOG } from "../devices/catalog.js";
import { budgetBytes, type BudgetLimits } from "../fit/budget.js";
import { hostBytes, type MemoryPlan } from "../plan/memoryPlan.js";
import { offloads, type Offload } from "../plan/offload.js";
import { resolveSetup, type RunSetup } from "../plan/setup.js";
import { wholeStepStateBytes } from "../plan/stateFloor.js";
import { tensorParallelApplies } from "../plan/transformerPlan.js";
import { validateAdviceRequest } from "./validateAdvice.js";
import { hasAttention, type Workload } from "../workload/workload.js";
import { COSTS, plural, type AdviceKind, type Cost } from "./costs.js";
import { checkpoint } from "../checkpoint.js";
import { GPU_COUNTS, TP_DEGREES, analyticReaches, firstPassing, measureAnalytic, planner, type Budget } from "./scaleOut.js";

/** One way to make the workload fit (an element of `advice` in `check --json` and `batch --json`). */
export interface Advice {
  /** The options to add or change, as typed: `--checkpointing`, `--zero 2 --gpus 8`, `--gpu H200`. */
  change: string;
  kind: AdviceKind;
  /** The largest batch per GPU with the change. */
  batchSize: number;
  /** The largest batch without it, on the same target. */
  fromBatchSize: number;
  /** The batch the advice aims for (`check --batch`, `batch --min-batch`). */
  targetBatch: number;
  reachesTarget: boolean;
  /** What the change costs, with its source. */
  cost: string;
  /** GPU bytes the changed workload needs at targetBatch (allocator rounding and context included). */
  bytesAtTarget: number;
  /** The budget the change was measured on: this target's, or the advised catalog GPU's. */
  budgetBytes: number;
  /** GPUs the changed setup runs on (data-parallel × tensor-parallel). */
  gpus: number;
  /** `device`: measured by probes on this device; `analytic`: the model on the same budget (a catalog GPU's for `--gpu`). */
  source: "device" | "analytic";
  /** Host memory the change needs on one node, when it offloads. */
  hostBytes?: number;
  /** Whether that host memory is available (absent when the host's memory is unknown). */
  hostFits?: boolean;
}

/** Where the advice is measured. */
export interface AdviceTarget extends Budget {
  /** The target's total memory: a bigger catalog GPU must have more. */
  totalBytes: number;
  /** The catalog id when the target is a catalog GPU. */
  id?: string;
  /** The largest batch of a plan found with device probes; absent for analytic targets. */
  measure?: (plan: MemoryPlan) => Promise<number>;
}

export interface AdviceRequest {
  workload: Workload;
  /** The user's setup. */
  setup: RunSetup;
  /** The batch to reach. */
  targetBatch: number;
  /** The largest batch without changes, on this target. */
  fromBatchSize: number;
  target: AdviceTarget;
  /** --reserve and --max-mem, applied to the catalog GPUs advised too. */
  limits?: BudgetLimits;
  /** Host memory available for offloaded states; unknown when absent. */
  hostBudgetBytes?: number;
  /** At most this many changes (default 5). */
  limit?: number;
  /** Cancels the work between measurements (and a probe in flight); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface AdviceReport {
  targetBatch: number;
  fromBatchSize: number;
  items: Advice[];
  /** Whether an advised change (alone, or the combined one) reaches the target batch. */
  reachable: boolean;
  /** One line saying what the list amounts to. */
  summary: string;
}

interface Candidate {
  kind: AdviceKind;
  change: string;
  setup: RunSetup;
  cost: Cost;
  gpus: number;
  /** The cost once the changed plan is known (offloading names its host memory). */
  costFor?: (plan: MemoryPlan) => Cost;
  /** A catalog GPU to evaluate on instead of the target. */
  catalog?: { id: string; totalBytes: number };
}

interface Evaluated extends Candidate {
  batchSize: number;
  bytesAtTarget: number;
  /** The budget it was measured on (a catalog GPU's for `--gpu`). */
  budgetBytes: number;
  plan: MemoryPlan;
  source: "device" | "analytic";
}

export const DEFAULT_ADVICE_LIMIT = 5;

/**
 * The changes that would make `workload` fit `targetBatch` on the target, each measured by the
 * same model on the same budget (and, on a device, by the same probe), ranked by cost; only
 * changes that apply to the workload and that the user does not have already. When no single
 * change reaches the target, a combination that does (and how many GPUs it needs) leads the
 * list; when nothing does, the list says so and keeps what comes closest.
 */
export async function advise(request: AdviceRequest): Promise<AdviceReport> {
  validateAdviceRequest(request);
  const { workload, setup, targetBatch, target } = request;
  const plan = planner(workload);
  const limit = request.limit ?? DEFAULT_ADVICE_LIMIT;

  const analytic = async (candidateSetup: RunSetup, on: Budget = target) => {
    await checkpoint(request.signal); // before building: a deep model's plan takes a while
    const p = plan(candidateSetup);
    return p === undefined ? undefined : { plan: p, ...(await measureAnalytic(p, on, targetBatch, request.signal)) };
  };
  /**
   * Whether a setup's largest batch on the target reaches the goal: the bytes at the goal are not
   * needed, nor replayed; nor is the plan built where its model states alone leave no room
   * (src/plan/stateFloor.ts: no batch fits then, so the answer is the same).
   */
  const reaches = async (candidateSetup: RunSetup) => {
    await checkpoint(request.signal);
    if (targetBatch >= 1 && wholeStepStateBytes(workload, candidateSetup) > target.budgetBytes - target.allocator.contextBytes) return false;
    const p = plan(candidateSetup);
    return p !== undefined && (await analyticReaches(p, target, targetBatch, request.signal));
  };
  const current = await analytic(setup);
  const currentShortfall = current === undefined ? Number.POSITIVE_INFINITY : current.bytesAtBatch - target.budgetBytes;
  /** How far a change leaves the target batch from fitting: what "closer" means when the batch does not move. */
  const shortfall = (e: Evaluated) => e.bytesAtTarget - e.budgetBytes;

  /** Measures a change: on the target by the model, then by the probe on a device; a catalog GPU by the model on its budget. */
  const evaluate = async (candidate: Candidate): Promise<Evaluated | undefined> => {
    const on: Budget = candidate.catalog ? catalogBudget(candidate.catalog.totalBytes, target, request.limits, target.maxBatch) : target;
    const result = await analytic(candidate.setup, on);
    if (result === undefined) return undefined;
    const probed = target.measure !== undefined && candidate.catalog === undefined;
    const batchSize = probed ? await target.measure!(result.plan) : result.batchSize;
    const cost = candidate.costFor?.(result.plan) ?? candidate.cost;
    return { ...candidate, cost, batchSize, bytesAtTarget: result.bytesAtBatch, budgetBytes: on.budgetBytes, plan: result.plan, source: probed ? "device" : "analytic" };
  };
  // A change whose model states alone leave no room on an analytic target fits no batch (the floor
  // `reaches` uses, src/plan/stateFloor.ts): it reaches nothing, so it can only be a row that comes
  // closer, and only where it needs fewer bytes than the batch now (the batch now is 0). Its plan
  // is built, and its bytes replayed, only where such a row could be shown: not when the changes
  // that reach already fill the list (an H100's advice for llama-3.1-8b: four plans fewer, among
  // them the shorter sequence's), nor when the batch now is above 0. On a device every change is
  // measured, as its probes may say otherwise.
  const noBatch = (c: Candidate) =>
    c.catalog === undefined && target.measure === undefined && targetBatch >= 1 && wholeStepStateBytes(workload, c.setup) > target.budgetBytes - target.allocator.contextBytes;
  const slots: (Evaluated | Candidate | undefined)[] = [];
  for (const candidate of await singleChanges(request, reaches)) slots.push(noBatch(candidate) ? candidate : await evaluate(candidate));
  const isEvaluated = (slot: Evaluated | Candidate | undefined): slot is Evaluated => slot !== undefined && "plan" in slot;
  const from = request.fromBatchSize;
  const helps = (e: Evaluated) => e.batchSize > from || (from === 0 && e.batchSize === 0 && shortfall(e) < currentShortfall);
  const byCost = (a: Evaluated, b: Evaluated) =>
    Math.floor(a.cost.rank) - Math.floor(b.cost.rank) || a.gpus - b.gpus || a.cost.rank - b.cost.rank || b.batchSize - a.batchSize;
  // A change that needs more host memory than this host has cannot work here, however large its
  // batch: it never counts as reaching the target, and comes after every change that can work.
  const reaching = slots.filter(isEvaluated).filter(helps).filter((e) => reachesHere(e, request)).sort(byCost);
  let together: Evaluated | undefined;
  // Also when the cheapest way there adds GPUs: a combination with the cheap savers may need far
  // fewer (llama-2-7b on an RTX 4090: --zero 3 --gpus 1024, where --checkpointing --zero 3 --gpus 8 does).
  const gpusNow = resolveSetup(setup).gpus * resolveSetup(setup).tp;
  if (reaching.length === 0 || reaching[0]!.gpus > gpusNow) {
    const recipe = await combination(request, reaches, (candidateSetup) => plan(candidateSetup) !== undefined);
    if (recipe !== undefined) together = await evaluate(recipe);
  }
  if (reaching.length > 0 && together !== undefined && reachesHere(together, request)) {
    // Ranked with the single changes by cost, and no single change offers more GPUs than it needs.
    const fewest = together.gpus;
    const kept = reaching.filter((e) => e.gpus <= fewest);
    reaching.splice(0, reaching.length, ...[...kept, together].sort(byCost));
    together = undefined;
  }
  const seen = new Set<string>();
  // The combination leads what is left when it works here; when the host cannot hold what it
  // offloads, it goes after the changes that can work.
  const combined = together && helps(together) ? [together] : [];
  const workingCombined = combined.filter((e) => hostFits(e, request));
  const shownBefore = new Set([...reaching, ...workingCombined].map((e) => e.change)).size;
  if (from === 0 && shownBefore < limit) {
    // Rows that come closer are shown: the changes set aside are measured now, in their places.
    for (const [i, slot] of slots.entries()) if (slot !== undefined && !isEvaluated(slot)) slots[i] = await evaluate(slot);
  }
  const closer = slots
    .filter(isEvaluated)
    .filter(helps)
    .filter((e) => !reachesHere(e, request))
    .sort((a, b) => Number(hostFits(b, request)) - Number(hostFits(a, request)) || b.batchSize - a.batchSize || shortfall(a) - shortfall(b));
  const ordered = [...reaching, ...workingCombined, ...closer.filter((e) => hostFits(e, request)), ...combined.filter((e) => !hostFits(e, request)), ...closer.filter((e) => !hostFits(e, request))]
    .filter((e) => !seen.has(e.change) && seen.add(e.change))
    .slice(0, limit);
  const items = ordered.map((e) => toAdvice(e, request));
  const reachable = items.some((i) => i.reachesTarget);
  return { targetBatch, fromBatchSize: from, items, reachable, summary: summarize(items, targetBatch, together !== undefined && reachesHere(together, request) ? together : undefined) };
}

/** Whether the host has the memory a change offloads to it (true when nothing is offloaded, or the host's memory is unknown). */
function hostFits(e: Evaluated, request: AdviceRequest): boolean {
  return request.hostBudgetBytes === undefined || hostBytes(e.plan) <= request.hostBudgetBytes;
}

/** Whether following the change here gives the target batch: on the GPU, and in this host's memory. */
function reachesHere(e: Evaluated, request: AdviceRequest): boolean {
  return e.batchSize >= request.targetBatch && hostFits(e, request);
}

/** A catalog GPU's budget as `batch --gpu ID` computes it: its total under the same limits, the job charged as on the target. */
function catalogBudget(totalBytes: number, target: AdviceTarget, limits: BudgetLimits = {}, maxBatch?: number): Budget {
  return {
    budgetBytes: budgetBytes({ freeBytes: totalBytes, totalBytes }, limits),
    allocator: target.allocator,
    ...(maxBatch !== undefined && { maxBatch }),
  };
}

function toAdvice(e: Evaluated, request: AdviceRequest): Advice {
  const host = hostBytes(e.plan);
  const offloading = e.kind === "offload" || (e.kind === "combined" && host > 0);
  return {
    change: e.change,
    kind: e.kind,
    batchSize: e.batchSize,
    fromBatchSize: request.fromBatchSize,
    targetBatch: request.targetBatch,
    reachesTarget: reachesHere(e, request),
    cost: e.cost.text,
    bytesAtTarget: e.bytesAtTarget,
    budgetBytes: e.budgetBytes,
    gpus: e.gpus,
    source: e.source,
    ...(offloading && { hostBytes: host }),
    ...(offloading && request.hostBudgetBytes !== undefined && { hostFits: host <= request.hostBudgetBytes }),
  };
}

function summarize(items: Advice[], targetBatch: number, together: Evaluated | undefined): string {
  const reaching = items.filter((i) => i.reachesTarget);
  // A combination ranked among the single changes (together is then undefined) counts as one of them.
  // A change that reaches the batch on the GPU but needs more host memory than there is does not
  // count: it is listed (it says what the host lacks), and the heading says why it is not counted.
  const hostShort = items.filter((i) => !i.reachesTarget && i.hostFits === false && i.batchSize >= targetBatch).length;
  const beyondHost = hostShort === 0 ? "" : `; ${hostShort} more would on the GPU, but need${hostShort === 1 ? "s" : ""} more host memory than there is`;
  if (reaching.length > 0 && (reaching[0]!.kind !== "combined" || together === undefined)) {
    return `${reaching.length === 1 ? "1 change reaches" : `${reaching.length} changes reach`} batch ${targetBatch}, cheapest first${beyondHost}`;
  }
  if (together !== undefined && together.batchSize >= targetBatch) {
    return `no single change reaches batch ${targetBatch}; together, \`${together.change}\` does, on ${plural(together.gpus)}`;
  }
  if (items.length === 0) return `no change vramfit models makes this workload fit batch ${targetBatch}, or come closer`;
  return `no change vramfit models reaches batch ${targetBatch}, alone or combined; the closest come first`;
}

/** The text part of `--offload` after adding what to offload to what the setup offloads already. */
function withOffload(current: Offload, add: "optimizer" | "params"): Offload {
  const what = offloads(current);
  const optimizer = what.optimizer || add === "optimizer";
  const params = what.params || add === "params";
  return optimizer && params ? "both" : optimizer ? "optimizer" : "params";
}

/** Each change on its own: only those that apply to the workload and that the user has not made. */
async function singleChanges(request: AdviceRequest, reaches: (setup: RunSetup) => Promise<boolean>): Promise<Candidate[]> {
  const { workload, setup, target } = request;
  const s = resolveSetup(setup);
  const train = s.mode === "train";
  const transformer = workload.kind === "transformer";
  const gpusNow = s.gpus * s.tp;
  const out: Candidate[] = [];
  const add = (kind: AdviceKind, change: string, changes: Partial<RunSetup>, cost: Cost, gpus = gpusNow) =>
    out.push({ kind, change, setup: { ...setup, ...changes }, cost, gpus });

  if (s.precision === "fp32") add("precision", "--precision amp", { precision: "amp" }, COSTS.precision());
  if (hasAttention(workload) && s.attention === "eager") add("attention", "--attention flash", { attention: "flash" }, COSTS.attention());
  if (train && workload.kind !== "affine") {
    if (transformer && s.checkpointing === "none") add("checkpointing", "--checkpointing selective", { checkpointing: "selective" }, COSTS.selective());
    if (s.checkpointing !== "full") add("checkpointing", "--checkpointing", { checkpointing: "full" }, COSTS.full());
  }
  if (train) {
    for (const stage of [2, 3] as const) {
      if (s.zeroStage >= stage) continue;
      if (s.gpus > 1) {
        add("zero", `--zero ${stage}`, { zeroStage: stage }, COSTS.zero(stage, s.gpus, false));
        continue;
      }
      const counts = GPU_COUNTS.filter((n) => n > 1);
      const n = (await firstPassing(counts, (gpus) => reaches({ ...setup, zeroStage: stage, gpus }))) ?? 8;
      add("zero", `--zero ${stage} --gpus ${n}`, { zeroStage: stage, gpus: n }, COSTS.zero(stage, n, true), n * s.tp);
    }
  }
  // The offload costs name the host memory, known once the changed plan is built (costFor).
  if (train && !offloads(s.offload).optimizer) {
    const offload = withOffload(s.offload, "optimizer");
    const needsZero = s.zeroStage === 0 && s.gpus > 1;
    out.push({
      kind: "offload",
      change: `--offload ${offload}${needsZero ? " --zero 2" : ""}`,
      setup: { ...setup, offload, ...(needsZero && { zeroStage: 2 as const }) },
      cost: COSTS.offloadOptimizer(0),
      costFor: (plan) => COSTS.offloadOptimizer(hostBytes(plan)),
      gpus: gpusNow,
    });
  }
  if (workload.kind !== "affine" && !offloads(s.offload).params && (!train || s.zeroStage === 3)) {
    const offload = withOffload(s.offload, "params");
    out.push({
      kind: "offload",
      change: `--offload ${offload}`,
      setup: { ...setup, offload },
      cost: COSTS.offloadParams(0),
      costFor: (plan) => COSTS.offloadParams(hostBytes(plan)),
      gpus: gpusNow,
    });
  }
  if (transformer) {
    const degrees = TP_DEGREES.filter((t) => t > s.tp && t % s.tp === 0);
    const valid: number[] = [];
    const planOf = planner(workload);
    // Where the user's setup applies (its plan is built: advice measured it first), a degree
    // applies when it splits the heads (src/plan/transformerPlan.ts); otherwise each is built.
    const applies = planOf(setup) !== undefined;
    for (const t of degrees) {
      await checkpoint(request.signal); // a deep model's plan takes a while to build
      if (applies ? tensorParallelApplies(workload, t) : planOf({ ...setup, tp: t }) !== undefined) valid.push(t);
    }
    if (valid.length > 0) {
      const t = (await firstPassing(valid, (tp) => reaches({ ...setup, tp }))) ?? valid[valid.length - 1]!;
      add("tp", `--tp ${t}`, { tp: t }, COSTS.tp(t), t * s.gpus);
    }
    const arch = workload.architecture;
    const seq = s.seq ?? arch.maxPositions;
    if (!arch.vision && seq > 64) {
      // Multiples of 64 below the current length; the largest that reaches the target, else half.
      const lengths = Array.from({ length: Math.floor((seq - 1) / 64) }, (_, i) => 64 * (i + 1)).reverse();
      const fits = await firstPassing(lengths, (length) => reaches({ ...setup, seq: length }), { lastFirst: true });
      const shorter = fits ?? Math.max(64, Math.floor(seq / 2 / 64) * 64);
      add("seq", `--seq ${shorter}`, { seq: shorter }, COSTS.seq(shorter));
    }
  }
  const catalog = [...GPU_CATALOG].filter((g) => g.totalBytes > target.totalBytes && g.id !== target.id).sort((a, b) => a.totalBytes - b.totalBytes);
  if (catalog.length > 0) {
    const reachesOn = async (gpu: (typeof catalog)[number]) => {
      const p = planner(workload)(setup);
      if (p === undefined) return false;
      const on = catalogBudget(gpu.totalBytes, target, request.limits, target.maxBatch);
      return analyticReaches(p, on, request.targetBatch, request.signal);
    };
    const gpu = (await firstPassing(catalog, reachesOn)) ?? catalog[catalog.length - 1]!;
    out.push({ kind: "gpu", change: `--gpu ${gpu.id}`, setup, cost: COSTS.gpu(gpu.id, gpu.totalBytes), gpus: gpusNow, catalog: { id: gpu.id, totalBytes: gpu.totalBytes } });
  }
  return out;
}

/**
 * When no single change is enough: the cheap savers that apply (mixed precision, flash attention,
 * full recomputation), then the fewest GPUs that reach the target — ZeRO-3 data parallelism over
 * N (training), tensor parallelism up to one node — and, for inference, streamed weights. When
 * even that falls short, the largest such setup, as the closest there is.
 */
async function combination(
  request: AdviceRequest,
  reaches: (setup: RunSetup) => Promise<boolean>,
  applies: (setup: RunSetup) => boolean,
): Promise<Candidate | undefined> {
  const { workload, setup } = request;
  const s = resolveSetup(setup);
  const train = s.mode === "train";
  const transformer = workload.kind === "transformer";
  const base: Partial<RunSetup> = {};
  const parts: string[] = [];
  const costs: Cost[] = [];
  if (s.precision === "fp32") {
    base.precision = "amp";
    parts.push("--precision amp");
    costs.push(COSTS.precision());
  }
  if (hasAttention(workload) && s.attention === "eager") {
    base.attention = "flash";
    parts.push("--attention flash");
    costs.push(COSTS.attention());
  }
  if (train && workload.kind !== "affine" && s.checkpointing !== "full") {
    base.checkpointing = "full";
    parts.push("--checkpointing");
    costs.push(COSTS.full());
  }
  const degrees = transformer ? TP_DEGREES.filter((t) => t >= s.tp && t % s.tp === 0) : [s.tp];
  const layouts: { tp: number; gpus: number; offload?: Offload }[] = [];
  // Training's layouts of one degree differ only in --gpus, and under ZeRO-3 the GPU count decides
  // no check but --ep's (it must divide them): without --ep a degree that does not apply reaches
  // nothing at any count (its plan does not build), so the search itself says so, and no plan at
  // one GPU is built only to ask (four of the advice case's, each as large as any other).
  const countsDecide = !train || (s.ep ?? 1) !== 1;
  // The fewest GPUs (degree × count) a layout found so far needs. Degrees come in ascending order
  // and the best layout is the one on the fewest GPUs, the lower degree on a tie: a later degree
  // matters only on fewer GPUs, so its search asks only whether it finds a count below that
  // (firstPassing's `below`: the same answer as the whole search wherever it matters, without the
  // tests that cannot change it — the llama-3.1-8b advice case's degrees 4 and 8 on an H100 build
  // no plan at all). Layouts that cannot lead are not listed: the first of the sorted list is the same.
  let fewest = Number.POSITIVE_INFINITY;
  const tryLayouts = async (offload?: Offload) => {
    for (const tp of degrees) {
      const at = (gpus: number): RunSetup => ({ ...setup, ...base, tp, ...(train && { zeroStage: 3 as const, gpus }), ...(offload && { offload }) });
      const leads = GPU_COUNTS.findIndex((n) => tp * (train ? n : 1) >= fewest);
      const below = leads < 0 ? GPU_COUNTS.length : leads;
      if (below === 0) continue; // on one GPU per rank it needs as many as the best already: it cannot lead
      await checkpoint(request.signal); // a deep model's plan takes a while to build
      if (countsDecide && !applies(at(1))) continue; // this degree does not apply
      const gpus = train ? await firstPassing(GPU_COUNTS, (n) => reaches(at(n)), { below }) : (await reaches(at(1))) ? 1 : undefined;
      if (gpus === undefined) continue;
      layouts.push({ tp, gpus, ...(offload && { offload }) });
      fewest = Math.min(fewest, tp * gpus);
    }
  };
  await tryLayouts();
  // Then streaming the weights from host memory too (ZeRO-Infinity; for inference, layer by layer).
  const streamed = workload.kind === "affine" || offloads(s.offload).params ? undefined : train ? ("both" as const) : ("params" as const);
  if (layouts.length === 0 && streamed !== undefined) await tryLayouts(streamed);
  let best = layouts.sort((a, b) => a.tp * a.gpus - b.tp * b.gpus || a.tp - b.tp)[0];
  let reached = true;
  if (best === undefined) {
    // Nothing reaches: the most that scaling out and streaming offer.
    reached = false;
    best = { tp: degrees[degrees.length - 1] ?? s.tp, gpus: train ? GPU_COUNTS[GPU_COUNTS.length - 1]! : 1, ...(streamed && { offload: streamed }) };
  }
  const changes: Partial<RunSetup> = { ...base, tp: best.tp };
  if (best.tp !== s.tp) {
    parts.push(`--tp ${best.tp}`);
    costs.push(COSTS.tp(best.tp));
  }
  if (train) {
    changes.zeroStage = 3;
    changes.gpus = best.gpus;
    parts.push(s.zeroStage === 3 ? `--gpus ${best.gpus}` : `--zero 3 --gpus ${best.gpus}`);
    costs.push(COSTS.zero(3, best.gpus, best.gpus !== s.gpus));
  }
  if (best.offload !== undefined) {
    changes.offload = best.offload;
    parts.push(`--offload ${best.offload}`);
  }
  if (parts.length === 0) return undefined;
  const gpus = best.tp * (train ? best.gpus : s.gpus);
  const costOf = (host: number): Cost => {
    const all = best.offload !== undefined ? [...costs, COSTS.offloadParams(host)] : costs;
    // A combination costs what its dearest part costs: it ranks in that part's class, fewer GPUs first.
    return { rank: Math.max(...costs.map((c) => c.rank), 0), short: "combined", text: `${plural(gpus)}; ${all.map((c) => c.short).join(", ")}${reached ? "" : "; still short of the target"}` };
  };
  return {
    kind: "combined",
    change: parts.join(" "),
    setup: { ...setup, ...changes },
    cost: costOf(0),
    costFor: (plan) => costOf(hostBytes(plan)),
    gpus,
  };
}

// A traced step as a MemoryPlan: the events' storages as tensors live over fine phases, so every evaluator replays the trace's own order.
import { BLAS_WORKSPACE_PREFIX } from "../plan/blasWorkspace.js";
import type { MemoryPlan, PlannedTensor } from "../plan/memoryPlan.js";
import type { StepTrace } from "./traceFile.js";

/**
 * The trace as a plan. A MemoryPlan replays phase by phase: first the frees of what the previous
 * phase was the last to use, then the phase's allocations in order (step/allocationTrace.ts). So
 * each run of the trace's events — some frees, then some allocations — becomes one phase, and the
 * replay makes the trace's allocations in the trace's order, each free before the allocation it
 * preceded. Only the order of frees within one run may change, which leaves the caching
 * allocator's free blocks the same (each free merges with its free neighbours, whatever the
 * order), the live bytes too. A phase's live bytes are the trace's at that run's last
 * allocation: the local peaks, so the plan's peak is the trace's.
 *
 * Phases are named `<trace phase> (traced) <op>` (`backward (traced) aten::mm`), so `plan
 * --timeline` folds them into the trace's own phases. The workspaces the trace cannot see
 * (`charged`: cuBLAS's — `cublasWorkspaces` of them, one per handle — and cuBLASLt's, which
 * PyTorch takes from its caching allocator at a handle's first matmul and keeps) are allocated,
 * live to the end, just before the step's first allocation after the resident states: early for
 * the backward thread's, which errs on the safe side.
 */
export function tracePlan(trace: StepTrace): MemoryPlan {
  const tensors: PlannedTensor[] = [];
  const tensorOf = new Map<number, PlannedTensor>();
  const phases: string[] = [];
  let phase = -1;
  let allocatedInRun = false;
  let tracePhase = -1;
  let charged = false;
  const chargedTensors = workspaceCharges(trace);
  for (const e of trace.events) {
    if (e.kind === "free") {
      if (allocatedInRun) {
        phase += 1;
        allocatedInRun = false;
      }
      const t = tensorOf.get(e.id)!;
      // Freed at the start of this run: live through the previous one.
      t.lastPhase = phase - 1;
      continue;
    }
    // A run is also cut where the trace's phase changes, so the timeline shows each (a cut with no free between changes no replay).
    if (phase < 0 || (allocatedInRun && e.phase !== tracePhase)) phase += 1;
    tracePhase = e.phase;
    if (!charged && e.op !== "resident") {
      for (const t of chargedTensors) tensors.push({ ...t, firstPhase: phase });
      charged = true;
    }
    const t: PlannedTensor = { name: `${e.op}#${e.id}`, category: e.category, fixedBytes: e.fixedBytes, perSampleBytes: e.perSampleBytes, firstPhase: phase };
    tensors.push(t);
    tensorOf.set(e.id, t);
    phases[phase] = `${trace.phases[e.phase]} (traced) ${e.op}`;
    allocatedInRun = true;
  }
  if (!charged) for (const t of chargedTensors) tensors.push({ ...t, firstPhase: Math.max(0, phase) });
  // A run of frees with no allocation after it ends the step: those tensors live to the end.
  const last = Math.max(0, phases.length - 1);
  for (const t of tensors) if (t.lastPhase !== undefined && t.lastPhase >= last) delete t.lastPhase;
  return {
    description: describeTrace(trace),
    parameterCount: trace.workload.parameterCount,
    ...(trace.workload.trainableParameterCount < trace.workload.parameterCount && { trainableParameterCount: trace.workload.trainableParameterCount }),
    phases: phases.length > 0 ? phases : ["step"],
    tensors,
  };
}

/**
 * The workspaces the trace cannot see, as tensors of the step (category `workspace`, fixed bytes),
 * named as a planned model's (plan/blasWorkspace.ts: one per thread's handle, the Python thread's
 * then autograd's), so that whatever leaves cuBLAS's workspaces out of a comparison leaves these
 * out too. Only what `charged` lists: the events hold everything else, and the CUDA context is the
 * target's, charged by the fit as for every workload (its job context), never by the trace.
 */
function workspaceCharges(trace: StepTrace): PlannedTensor[] {
  const charges: PlannedTensor[] = [];
  const threads = ["forward", "backward"];
  const workspaces = trace.charged.cublasWorkspaces ?? 1;
  for (let i = 0; i < workspaces && (trace.charged.cublasWorkspaceBytes ?? 0) > 0; i++) {
    charges.push({ name: `${BLAS_WORKSPACE_PREFIX}.${threads[i] ?? i}`, category: "workspace", fixedBytes: trace.charged.cublasWorkspaceBytes!, perSampleBytes: 0 });
  }
  // A cuBLASLt workspace of its own only where the writer says PyTorch keeps one (TORCH_CUBLASLT_UNIFIED_WORKSPACE=0).
  if ((trace.charged.cublasLtWorkspaceBytes ?? 0) > 0) charges.push({ name: "cublaslt.workspace", category: "workspace", fixedBytes: trace.charged.cublasLtWorkspaceBytes!, perSampleBytes: 0 });
  return charges;
}

/** `traced llama (hf-config): 6738415616 parameters; train, bf16, adamw, seq 2048; torch 2.13.0+cpu`. */
export function describeTrace(trace: StepTrace): string {
  const o = trace.options;
  const given = (key: string) => (o[key] === undefined || o[key] === null || o[key] === false ? undefined : o[key]);
  const run = [
    given("mode"),
    given("precision"),
    given("optimizer") !== undefined && given("mode") !== "infer" ? `${String(o.optimizer)}${given("optimizerImpl") !== undefined ? ` (${String(o.optimizerImpl)})` : ""}` : undefined,
    given("seq") !== undefined ? `seq ${String(o.seq)}` : undefined,
    given("image") !== undefined ? `image ${String(o.image)}` : undefined,
    given("checkpointing") !== undefined ? `checkpointing ${o.checkpointing === true ? "full" : String(o.checkpointing)}` : undefined,
    given("loraRank") !== undefined ? `LoRA r=${String(o.loraRank)}` : undefined,
    given("gpu") !== undefined ? `for ${String(o.gpu)}` : undefined,
  ].filter((part) => part !== undefined && part !== false);
  const batch = trace.affine ? "" : `; at batch ${trace.batches[0]} only`;
  const torch = trace.environment.torch !== undefined ? `; torch ${trace.environment.torch}` : "";
  return `traced ${trace.workload.name} (${trace.workload.source}): ${trace.workload.parameterCount} parameters; ${run.join(", ") || "as traced"}${batch}${torch}`;
}

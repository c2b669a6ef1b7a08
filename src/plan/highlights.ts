// The parts of a plan worth naming beside its categories: frozen weights, adapters, autocast's copies, workspaces, dequantization, communication.
import { isLive, peakPhase, tensorBytes, type MemoryPlan, type PlannedTensor } from "./memoryPlan.js";

/** One named part of a plan and its bytes at the peak phase for a batch size. */
export interface PlanHighlight {
  /** `frozen weights`, `adapters`, `dequantization buffer`, … */
  part: string;
  bytes: number;
  /** What it holds, for people. */
  detail: string;
}

const PARTS: { part: string; detail: string; applies: (plan: MemoryPlan) => boolean; matches: (t: PlannedTensor) => boolean }[] = [
  {
    part: "frozen weights",
    detail: "the base model's weights: no gradients, no optimizer states",
    applies: (plan) => plan.trainableParameterCount !== undefined && plan.trainableParameterCount < plan.parameterCount,
    matches: (t) => t.category === "parameters" && !t.name.includes(".lora."),
  },
  {
    part: "adapters",
    detail: "LoRA weights, gradients and optimizer states",
    applies: () => true,
    matches: (t) => t.category !== "activations" && t.name.includes(".lora."),
  },
  {
    part: "adapter activations",
    detail: "each adapter's r-wide intermediate, kept for backward",
    applies: () => true,
    matches: (t) => t.category === "activations" && t.name.includes(".lora."),
  },
  {
    part: "DDP gradient buckets",
    detail: "DDP's flat buffers: a second copy of the gradients (1 MiB, then 25 MiB buckets)",
    applies: () => true,
    matches: (t) => t.name.startsWith("ddp.bucket."),
  },
  {
    part: "NCCL buffers",
    detail: "each communicator's protocol buffers (assumed 16 channels)",
    applies: () => true,
    matches: (t) => t.name.startsWith("nccl."),
  },
  {
    part: "autocast weight copies",
    detail: "each layer's 16-bit weights, cast in forward, kept by autocast's cache and autograd until its backward",
    applies: () => true,
    matches: (t) => t.name.startsWith("autocast."),
  },
  {
    part: "cuBLAS workspaces",
    detail: "one per thread that runs matmuls (forward, autograd's backward), from the caching allocator",
    applies: () => true,
    matches: (t) => t.name.startsWith("cublas.workspace"),
  },
  {
    part: "dequantization buffer",
    detail: "the largest quantized matrix in 16 bits while its layer runs",
    applies: () => true,
    matches: (t) => t.name.startsWith("dequantize."),
  },
];

/** The highlights that apply to a plan, with their bytes live at the peak phase for `batch` (empty parts left out). */
export function planHighlights(plan: MemoryPlan, batch: number, allocate: (bytes: number) => number = (bytes) => bytes): PlanHighlight[] {
  const peak = peakPhase(plan, batch, allocate);
  const out: PlanHighlight[] = [];
  for (const { part, detail, applies, matches } of PARTS) {
    if (!applies(plan)) continue;
    let bytes = 0;
    for (const t of plan.tensors) {
      const b = tensorBytes(t, batch);
      if (b > 0 && matches(t) && isLive(plan, t, peak)) bytes += allocate(b);
    }
    if (bytes > 0) out.push({ part, bytes, detail });
  }
  return out;
}

// The memory plan of a CNN: model states per block, and what autograd saves per layer at the run's image size.
import { invalidArgument } from "../errors.js";
import { CnnShapeError, traceCnn, type CnnTrace, type SavedKind } from "../workload/cnn.js";
import type { CnnWorkload } from "../workload/workload.js";
import { weightBytes } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { hostStateTensors, modelStateTensors } from "./modelStates.js";
import { describeSetup, type ResolvedSetup } from "./setup.js";

/** Bytes of one saved element: activations in the run's dtype, int64 indices, bool masks, fp32 loss. */
function elementBytes(kind: SavedKind, activationBytes: number): number {
  switch (kind) {
    case "activation":
      return activationBytes;
    case "index":
      return 8;
    case "mask":
      return 1;
    case "float32":
      return 4;
  }
}

function trace(workload: CnnWorkload, imageSize: number): CnnTrace {
  try {
    return traceCnn(workload.network, imageSize);
  } catch (error) {
    if (error instanceof CnnShapeError) {
      throw invalidArgument("--image", imageSize, `an image size ${workload.name} accepts (layer ${error.layer} ${error.message})`);
    }
    throw error;
  }
}

function checkOptions(workload: CnnWorkload, setup: ResolvedSetup): void {
  if (setup.seq !== undefined) throw invalidArgument("--seq", setup.seq, `no --seq for ${workload.name}, a CNN (use --image)`);
  if (setup.tp > 1) throw invalidArgument("--tp", setup.tp, `1 for ${workload.name} (tensor parallelism applies to transformers)`);
  if (setup.checkpointing === "selective") {
    throw invalidArgument("--checkpointing", "selective", `none or full for ${workload.name} (selective recomputation is defined for attention)`);
  }
}

export function cnnPlan(workload: CnnWorkload, setup: ResolvedSetup): MemoryPlan {
  checkOptions(workload, setup);
  const network = workload.network;
  const imageSize = setup.image ?? network.imageSize;
  const reference = trace(workload, network.imageSize);
  const run = imageSize === network.imageSize ? reference : trace(workload, imageSize);
  if (run.parameterCount !== reference.parameterCount) {
    // Only a linear layer after a flatten changes size with the image: PyTorch would refuse the input.
    throw invalidArgument("--image", imageSize, `${network.imageSize} for ${workload.name} (its classifier's input size is fixed by the image size; add an adaptiveavgpool layer to accept others)`);
  }
  const e = weightBytes(setup.precision);
  const groups = reference.parameterGroups.map((g) => ({ ...g, tensorParallelCount: 0 }));
  const host = hostStateTensors(groups, setup);
  const tensors: PlannedTensor[] = modelStateTensors(groups, setup);
  const perSample = (name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor => ({ name, category, fixedBytes: 0, perSampleBytes: bytes });

  if (setup.mode === "train") {
    const savedBytes = run.saved.map((s) => ({ ...s, bytes: s.elements * elementBytes(s.kind, e) }));
    if (setup.checkpointing === "full") {
      // torch.utils.checkpoint around every top-level layer (block): keep each block's input, and
      // in backward recompute one block at a time.
      const kept = new Set<number>();
      for (const input of run.segmentInputs) {
        if (kept.has(input.storage)) continue;
        kept.add(input.storage);
        tensors.push(perSample(input.name, "activations", input.elements * e));
      }
      const bySegment = new Map<number, typeof savedBytes>();
      for (const s of savedBytes) {
        if (kept.has(s.storage)) continue;
        bySegment.set(s.segment, [...(bySegment.get(s.segment) ?? []), s]);
      }
      const total = (list: typeof savedBytes) => list.reduce((sum, s) => sum + s.bytes, 0);
      const largest = [...bySegment.values()].reduce((best, list) => (total(list) > total(best) ? list : best), [] as typeof savedBytes);
      for (const s of largest) tensors.push(perSample(`recompute.${s.name}`, "activations", s.bytes));
    } else {
      for (const s of savedBytes) tensors.push(perSample(s.name, "activations", s.bytes));
    }
    const fixedSaved = run.fixedSavedBytes.reduce((sum, s) => sum + s.bytes, 0);
    // Tiny per-channel statistics are pooled into one allocation, as PyTorch's allocator packs them.
    tensors.push({ name: "batchnorm.saved_mean_invstd", category: "activations", fixedBytes: fixedSaved, perSampleBytes: 0 });
    const largest = savedBytes.reduce((max, s) => Math.max(max, s.bytes), 0);
    // Backward holds the gradient of an op's output and of its input at once: two of the largest.
    tensors.push(perSample("backward.grad_output", "workspace", largest), perSample("backward.grad_input", "workspace", largest));
  } else {
    tensors.push(perSample("workspace.forward_peak", "workspace", run.inferencePeakElements * e));
  }

  return {
    description: `${workload.name}: ${reference.parameterCount} parameters; ${describeSetup({ ...setup, image: imageSize }, { transformer: false })}`,
    parameterCount: reference.parameterCount,
    tensors: tensors.filter((t) => t.fixedBytes > 0 || t.perSampleBytes > 0),
    ...(host !== undefined && { host }),
  };
}

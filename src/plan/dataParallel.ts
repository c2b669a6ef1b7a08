// Multi-GPU communication memory: PyTorch DDP's gradient buckets and NCCL's per-communicator buffers.
import { tensorBytes, type MemoryPlan, type PlannedTensor } from "./memoryPlan.js";
import type { ResolvedSetup } from "./setup.js";
import { concatTensors } from "./tensorColumns.js";

const MiB = 2 ** 20;

/** DDP's `bucket_cap_mb` default, 25 MiB (torch/nn/parallel/distributed.py, DistributedDataParallel.__init__). */
export const DDP_BUCKET_CAP_BYTES = 25 * MiB;
/** DDP's first bucket, `dist._DEFAULT_FIRST_BUCKET_BYTES` = 1 MiB: the last layers' gradients are all-reduced early. */
export const DDP_FIRST_BUCKET_BYTES = 1 * MiB;

/**
 * NCCL's buffers per connection to a peer, one per protocol (nccl src/init.cc): Simple
 * `DEFAULT_BUFFSIZE` 4 MiB (`NCCL_BUFFSIZE`), LL `DEFAULT_LL_BUFFSIZE` = 8 lines × 512 threads ×
 * 8 steps × 16 B = 512 KiB, LL128 `DEFAULT_LL128_BUFFSIZE` = 120 × 640 × 8 × 8 B = 4,800 KiB.
 */
export const NCCL_BUFFERS_PER_CONNECTION = 4 * MiB + 8 * 512 * 8 * 16 + 120 * 640 * 8 * 8;
/**
 * Channels a communicator runs (an assumption: NCCL picks 2–32 from the topology, `NCCL_MIN_NCHANNELS`
 * / `NCCL_MAX_NCHANNELS`; 16 is typical of NVLink machines) and the connections each channel
 * receives on: one for the ring (from the previous rank) and one for the tree (its parent or children).
 */
export const NCCL_ASSUMED_CHANNELS = 16;
export const NCCL_CONNECTIONS_PER_CHANNEL = 2;

/** One communicator's buffers: 16 channels × 2 connections × 9.19 MiB = 294 MiB. */
export const NCCL_COMMUNICATOR_BYTES = NCCL_ASSUMED_CHANNELS * NCCL_CONNECTIONS_PER_CHANNEL * NCCL_BUFFERS_PER_CONNECTION;

/**
 * DDP's buckets for `gradientBytes` of gradients: the first of 1 MiB, then 25 MiB each (the
 * Reducer fills buckets with whole parameters in reverse order up to the cap; their sizes sum to
 * the gradients, which is what memory sees).
 */
export function ddpBucketSizes(gradientBytes: number): number[] {
  const sizes: number[] = [];
  let left = gradientBytes;
  for (let cap = DDP_FIRST_BUCKET_BYTES; left > 0; cap = DDP_BUCKET_CAP_BYTES) {
    const size = Math.min(cap, left);
    sizes.push(size);
    left -= size;
  }
  return sizes;
}

/** Whether PyTorch DDP reduces the gradients: training over several GPUs without ZeRO (DeepSpeed has its own buckets). */
export function usesDdp(setup: ResolvedSetup): boolean {
  return setup.mode === "train" && setup.gpus > 1 && setup.zeroStage === 0;
}

/**
 * The plan with its communication memory (category `communication`, live the whole step:
 * allocated when DDP is built and when each communicator first runs):
 * - `ddp.bucket.N`: under DDP, flat buffers the size of every trainable gradient, a second copy of
 *   them (the Reducer's `initialize_buckets` allocates them at construction). With
 *   `gradient_as_bucket_view` (`--ddp-bucket-view`) the gradients *are* views into the buckets:
 *   no second copy, but the gradients then live the whole step (zero_grad cannot free them).
 * - `nccl.<group>.buffers`: each communicator's protocol buffers (NCCL_COMMUNICATOR_BYTES).
 */
export function withCommunication(plan: MemoryPlan, setup: ResolvedSetup): MemoryPlan {
  const added: PlannedTensor[] = [];
  let tensors = plan.tensors;
  if (usesDdp(setup)) {
    const gradients = plan.tensors.filter((t) => t.category === "gradients");
    if (setup.ddpBucketView) {
      tensors = tensors.map((t) => {
        if (t.category !== "gradients") return t;
        const { firstPhase: _, lastPhase: __, ...wholeStep } = t;
        return wholeStep;
      });
    } else {
      const bytes = gradients.reduce((sum, t) => sum + tensorBytes(t, 0), 0);
      ddpBucketSizes(bytes).forEach((size, i) => added.push({ name: `ddp.bucket.${i}`, category: "communication", fixedBytes: size, perSampleBytes: 0 }));
    }
  }
  const groups = [setup.mode === "train" && setup.gpus > 1 ? "data_parallel" : "", setup.tp > 1 ? "tensor_parallel" : "", (setup.ep ?? 1) > 1 ? "expert_parallel" : ""];
  for (const group of groups.filter((g) => g !== "")) {
    added.push({ name: `nccl.${group}.buffers`, category: "communication", fixedBytes: NCCL_COMMUNICATOR_BYTES, perSampleBytes: 0 });
  }
  if (added.length === 0 && tensors === plan.tensors) return plan;
  return { ...plan, tensors: concatTensors(tensors, added) }; // a copy without the iterator, its columns from its parts' (src/plan/buildPlan.ts)
}

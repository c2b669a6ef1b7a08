// Data-parallel training's communication memory: DDP's gradient buckets and NCCL's buffers.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { DDP_BUCKET_CAP_BYTES, DDP_FIRST_BUCKET_BYTES, NCCL_BUFFERS_PER_CONNECTION, NCCL_COMMUNICATOR_BYTES, ddpBucketSizes } from "../../src/plan/dataParallel.js";
import { bytesByCategory, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { parseSetup, type RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const MiB = 2 ** 20;
const plan = (name: string, setup: Partial<RunSetup>): MemoryPlan => buildPlan(presetWorkload(name)!, { mode: "train", precision: "amp", optimizer: "adamw", ...setup });
const named = (p: MemoryPlan, prefix: string) => p.tensors.filter((t) => t.name.startsWith(prefix));
const sum = (tensors: { fixedBytes: number }[]) => tensors.reduce((total, t) => total + t.fixedBytes, 0);

describe("PyTorch DDP's buckets (torch/nn/parallel/distributed.py)", () => {
  test("25 MiB buckets (bucket_cap_mb=25) after a first of 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES)", () => {
    expect(DDP_BUCKET_CAP_BYTES).toBe(25 * MiB);
    expect(DDP_FIRST_BUCKET_BYTES).toBe(MiB);
    expect(ddpBucketSizes(60 * MiB)).toEqual([MiB, 25 * MiB, 25 * MiB, 9 * MiB]);
  });

  test("without gradient_as_bucket_view they are a second copy of every gradient", () => {
    const p = plan("gpt2", { seq: 1024, gpus: 4 });
    const gradients = sum(p.tensors.filter((t) => t.category === "gradients"));
    expect(gradients).toBe(4 * 124_439_808); // amp without ZeRO: torch.cuda.amp's fp32 gradients (src/plan/autocast.ts)
    expect(sum(named(p, "ddp.bucket."))).toBe(gradients);
    expect(named(p, "ddp.bucket.").every((t) => t.category === "communication" && t.firstPhase === undefined)).toBe(true);
  });

  test("--ddp-bucket-view: no copy; the gradients are the buckets, live the whole step", () => {
    const unet = buildPlan(presetWorkload("sd2.1-unet")!, parseSetup({ gpus: 8, ddpBucketView: true, image: 512 }));
    expect(named(unet, "ddp.bucket.")).toHaveLength(0);
    expect(unet.tensors.filter((t) => t.category === "gradients").every((t) => t.firstPhase === undefined && t.lastPhase === undefined)).toBe(true);
    const copied = buildPlan(presetWorkload("sd2.1-unet")!, parseSetup({ gpus: 8, image: 512 }));
    expect(copied.tensors.find((t) => t.name === "up_blocks.3.grads")!.firstPhase).toBeGreaterThan(0);
  });

  test("with LoRA only the adapters' gradients are bucketed", () => {
    const p = plan("llama-2-7b", { seq: 512, gpus: 2, lora: { rank: 8, targets: ["q", "v"] } });
    expect(sum(named(p, "ddp.bucket."))).toBe(4 * 4_194_304); // fp32 adapter gradients under torch.cuda.amp
  });

  test("ZeRO (DeepSpeed, not DDP) and a single GPU have no DDP buckets", () => {
    expect(named(plan("gpt2", { seq: 1024, gpus: 4, zeroStage: 1 }), "ddp.")).toHaveLength(0);
    expect(named(plan("gpt2", { seq: 1024 }), "ddp.")).toHaveLength(0);
  });
});

describe("NCCL's buffers (nccl src/init.cc: DEFAULT_BUFFSIZE, DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE)", () => {
  test("4 MiB (Simple) + 512 KiB (LL) + 4,800 KiB (LL128) a connection; 16 channels × 2 connections a communicator", () => {
    expect(NCCL_BUFFERS_PER_CONNECTION).toBe(4 * MiB + 512 * 1024 + 4800 * 1024);
    expect(NCCL_COMMUNICATOR_BYTES).toBe(32 * NCCL_BUFFERS_PER_CONNECTION);
  });

  test("one communicator per parallel group the rank is in: data, tensor, expert", () => {
    expect(sum(named(plan("gpt2", { seq: 1024, gpus: 4, zeroStage: 2 }), "nccl."))).toBe(NCCL_COMMUNICATOR_BYTES);
    expect(sum(named(plan("llama-2-7b", { seq: 1024, gpus: 2, tp: 2 }), "nccl."))).toBe(2 * NCCL_COMMUNICATOR_BYTES);
    expect(named(plan("llama-2-7b", { mode: "infer", seq: 1024, gpus: 2 }), "nccl.")).toHaveLength(0); // replicas serve alone
    expect(named(plan("mixtral-8x7b", { mode: "infer", seq: 1024, gpus: 2, ep: 2 }), "nccl.")).toHaveLength(1);
    expect(named(plan("gpt2", { seq: 1024 }), "nccl.")).toHaveLength(0);
  });

  test("plan shows them as the communication category", () => {
    const b = bytesByCategory(plan("gpt2", { seq: 1024, gpus: 4 }), 1);
    expect(b.communication).toBe(4 * 124_439_808 + NCCL_COMMUNICATOR_BYTES);
  });

  test("--ddp-bucket-view needs DDP", () => {
    expect(() => parseSetup({ ddpBucketView: true })).toThrow(/--ddp-bucket-view: expected training over --gpus N > 1 without ZeRO/);
    expect(() => parseSetup({ ddpBucketView: true, gpus: 2, zero: 1 })).toThrow(/--ddp-bucket-view/);
  });
});

// The memory plan of a diffusion UNet: model states per block, what autograd saves at the run's latent size, resident encoders.
import { invalidArgument } from "../errors.js";
import { transformerParameterCount } from "../workload/transformer.js";
import { traceUNet, type UNetSavedKind, type UNetTrace } from "../workload/unet.js";
import type { UNetWorkload } from "../workload/workload.js";
import { weightBytes } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { hostStateTensors, modelStateTensors } from "./modelStates.js";
import { describeSetup, type ResolvedSetup } from "./setup.js";
import { TrainingPhases } from "./stepPhases.js";
import { clipTextEncoder, vaeParameterCount } from "./unetEncoders.js";

function elementBytes(kind: UNetSavedKind, e: number): number {
  switch (kind) {
    case "activation":
      return e;
    case "float32":
      return 4;
    case "cast":
      return e < 4 ? e : 0;
  }
}

/** The latent side for `--image` pixels (the VAE downsamples by 8): SD 2.1 trains at 768² (96² latents). */
function latentOf(workload: UNetWorkload, setup: ResolvedSetup): { latent: number; image: number } {
  const { vaeScale, sampleSize } = workload.network;
  if (setup.image === undefined) return { latent: sampleSize, image: sampleSize * vaeScale };
  if (setup.image % vaeScale !== 0 || setup.image < vaeScale) {
    throw invalidArgument("--image", setup.image, `a multiple of ${vaeScale} pixels for ${workload.name} (its VAE works on ${vaeScale}×${vaeScale} pixel blocks)`);
  }
  return { latent: setup.image / vaeScale, image: setup.image };
}

const perSample = (name: string, category: PlannedTensor["category"], bytes: number, range: { firstPhase: number; lastPhase: number } | object = {}): PlannedTensor => ({
  name,
  category,
  fixedBytes: 0,
  perSampleBytes: bytes,
  ...range,
});

/**
 * What training saves, stage by stage: every storage the trace records, each live from its
 * stage's forward to the end of that stage's backward; with `--checkpointing` (diffusers'
 * gradient checkpointing: one `torch.utils.checkpoint` per resnet and per transformer) only each
 * module's input, the inputs every module shares and what is saved outside the modules, plus, in
 * backward, one module's recomputed set (the largest).
 */
function trainingActivations(run: UNetTrace, e: number, step: TrainingPhases, checkpointing: boolean): PlannedTensor[] {
  const bytesOf = (kind: UNetSavedKind, elements: number) => elements * elementBytes(kind, e);
  const tensors: PlannedTensor[] = [];
  let largest = 0;
  if (!checkpointing) {
    for (const s of run.saved) {
      const bytes = bytesOf(s.kind, s.elements);
      largest = Math.max(largest, bytes);
      tensors.push(perSample(s.name, "activations", bytes, step.saved(s.stage)));
    }
  } else {
    const kept = new Set<number>(run.sharedInputs);
    for (const m of run.modules) {
      if (kept.has(m.inputStorage)) continue;
      kept.add(m.inputStorage);
      tensors.push(perSample(`${m.name}.checkpoint_input`, "activations", m.inputElements * e, step.saved(m.stage)));
    }
    const byModule = new Map<number, typeof run.saved>();
    for (const s of run.saved) {
      if (s.module < 0 || run.sharedInputs.includes(s.storage)) {
        if (!kept.has(s.storage)) tensors.push(perSample(s.name, "activations", bytesOf(s.kind, s.elements), step.saved(s.stage)));
        continue;
      }
      if (kept.has(s.storage)) continue;
      byModule.set(s.module, [...(byModule.get(s.module) ?? []), s]);
    }
    const total = (list: typeof run.saved) => list.reduce((sum, s) => sum + bytesOf(s.kind, s.elements), 0);
    let heaviest: typeof run.saved = [];
    for (const list of byModule.values()) if (total(list) > total(heaviest)) heaviest = list;
    const stage = heaviest[0]?.stage ?? 0;
    for (const s of heaviest) {
      const bytes = bytesOf(s.kind, s.elements);
      largest = Math.max(largest, bytes);
      tensors.push(perSample(`recompute.${s.name}`, "activations", bytes, step.backwardTransient(stage)));
    }
  }
  // Backward holds the gradient of an op's output and of its input at once: two of the largest, throughout backward.
  const backward = { firstPhase: step.backward(step.lossStage), lastPhase: step.backwardEnd(0) };
  tensors.push(perSample("backward.grad_output", "workspace", largest, backward), perSample("backward.grad_input", "workspace", largest, backward));
  return tensors;
}

/**
 * The frozen text encoder and VAE on the GPU beside the UNet (`--resident-encoders`), in the
 * weights' dtype; no gradients or optimizer states. They run without autograd before the UNet's
 * forward pass, while none of its activations exist, so their transient memory is not the peak.
 */
function encoderTensors(setup: ResolvedSetup): PlannedTensor[] {
  const w = weightBytes(setup.precision);
  return [
    { name: "text_encoder.weights", category: "parameters", fixedBytes: transformerParameterCount(clipTextEncoder()) * w, perSampleBytes: 0 },
    { name: "vae.weights", category: "parameters", fixedBytes: vaeParameterCount() * w, perSampleBytes: 0 },
  ];
}

export function unetPlan(workload: UNetWorkload, setup: ResolvedSetup): MemoryPlan {
  if (setup.seq !== undefined) throw invalidArgument("--seq", setup.seq, `no --seq for ${workload.name}, a diffusion UNet (its text context is ${workload.network.contextTokens} tokens; use --image)`);
  if (setup.tp > 1) throw invalidArgument("--tp", setup.tp, `1 for ${workload.name} (tensor parallelism applies to transformers)`);
  if (setup.checkpointing === "selective") throw invalidArgument("--checkpointing", "selective", `none or full for ${workload.name} (diffusers checkpoints whole resnets and transformers)`);
  const { latent, image } = latentOf(workload, setup);
  // diffusers' AttnProcessor2_0 calls SDPA: every fused kernel keeps what flash keeps; math and eager materialize the scores.
  const run = traceUNet(workload.network, latent, setup.attention === "eager" || setup.attention === "math" ? "eager" : "flash");
  const e = weightBytes(setup.precision);
  const groups = run.parameterGroups.map((g) => ({ ...g, tensorParallelCount: 0 }));
  const host = hostStateTensors(groups, setup);
  const training = setup.mode === "train";
  const step = new TrainingPhases(run.stages);
  const tensors: PlannedTensor[] = modelStateTensors(groups, setup).map((t) => {
    // Each block's gradients exist from its backward until the optimizer step.
    const group = run.stages.findIndex((stage) => t.name === `${stage}.grads`);
    return training && group >= 0 ? { ...t, ...step.gradient(group) } : t;
  });
  if (setup.residentEncoders) tensors.push(...encoderTensors(setup));
  if (training) {
    tensors.push(...trainingActivations(run, e, step, setup.checkpointing === "full"));
  } else {
    tensors.push(perSample("workspace.forward_peak", "workspace", run.inferencePeakElements * e));
  }
  const encoders = setup.residentEncoders ? ", text encoder and VAE resident" : "";
  return {
    description: `${workload.name}: ${run.parameterCount} parameters; ${describeSetup({ ...setup, image }, { transformer: false })}, attention ${setup.attention} (${latent}² latents)${encoders}`,
    parameterCount: run.parameterCount,
    ...(training && { phases: step.names }),
    tensors: tensors.filter((t) => t.fixedBytes > 0 || t.perSampleBytes > 0),
    ...(host !== undefined && { host }),
  };
}

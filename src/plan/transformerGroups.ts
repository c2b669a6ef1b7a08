// A transformer's parameter groups as the run holds them: weight format, frozen base and adapters.
import { transformerParameterGroups, type TransformerArchitecture } from "../workload/transformer.js";
import { weightBytes } from "./bytesPerParameter.js";
import { adaptedLinears, loraParameterCount } from "./lora.js";
import { expertParallelGroups } from "./moe.js";
import type { StateGroup } from "./modelStates.js";
import { quantizedGroups } from "./quantization.js";
import type { ResolvedSetup } from "./setup.js";

/**
 * The groups modelStateTensors allocates: the model's (`transformerParameterGroups`), their
 * linear weights in `--weights`' format, and with `--lora-rank` frozen, followed by one adapter
 * group per layer (`layers.3.lora`, run in stage `layers.3`) holding the trainable parameters.
 */
export function transformerStateGroups(arch: TransformerArchitecture, setup: ResolvedSetup): readonly StateGroup[] {
  let groups = parameterGroupsOf(arch);
  if (setup.weights !== undefined) groups = quantizedGroups(arch, groups, setup.weights, weightBytes(setup.precision));
  const ep = setup.ep ?? 1;
  groups = expertParallelGroups(groups, arch, ep, setup.gpus);
  if (setup.lora === undefined) return groups;
  // Adapters on experts are sharded with their experts.
  const adapted = adaptedLinears(arch, setup.lora);
  const adapterCount = (expert: boolean) => adapted.filter((l) => l.expert === expert).reduce((sum, l) => sum + l.copies * setup.lora!.rank * (l.inFeatures + l.outFeatures), 0);
  const adapters = adapterCount(false) + Math.ceil(adapterCount(true) / ep);
  return [
    ...groups.map((g) => ({ ...g, frozen: true })),
    ...Array.from({ length: arch.layers }, (_, i) => ({ name: `layers.${i}.lora`, count: adapters, tensorParallelCount: 0, stage: `layers.${i}`, ...(adaptersInFp32(setup) && { fp32: true }) })),
  ];
}

/**
 * The model's parameter groups, made once per architecture (by identity, as src/plan/timelineCache.ts
 * keys timelines): advice builds dozens of plans of one model and asks each setup's state floor
 * (src/plan/stateFloor.ts), and GPT-3's 98 groups, each checking its tensors against its count,
 * were made again every time (a tenth of `check --model gpt3-175b`'s self time). Frozen: every
 * caller maps them into new groups and edits none.
 */
function parameterGroupsOf(arch: TransformerArchitecture): readonly StateGroup[] {
  let groups = parameterGroups.get(arch);
  if (groups === undefined) {
    groups = Object.freeze(transformerParameterGroups(arch).map((g) => Object.freeze(g)));
    parameterGroups.set(arch, groups);
  }
  return groups;
}
const parameterGroups = new WeakMap<TransformerArchitecture, readonly StateGroup[]>();

/**
 * Whether the adapters are kept in fp32 on a 16-bit model: PEFT's `autocast_adapter_dtype=True`
 * (its default, peft 0.21 peft_model.py line 128) upcasts fp16 and bf16 adapter weights to fp32,
 * so their gradients and optimizer states are fp32 too (the traced LoRA step's 6.8 MB of Adam
 * states for Llama-3.2-1B's 852k adapter parameters).
 */
export function adaptersInFp32(setup: ResolvedSetup): boolean {
  return setup.lora !== undefined && (setup.precision === "fp16" || setup.precision === "bf16");
}

/** Parameters in all (the base and its adapters, as PEFT's "all params") and those trained (the adapters, or all of them). */
export function transformerCounts(arch: TransformerArchitecture, setup: ResolvedSetup): { parameterCount: number; trainableParameterCount: number } {
  const base = parameterGroupsOf(arch).reduce((sum, g) => sum + g.count, 0); // transformerParameterCount's sum, from the kept groups
  if (setup.lora === undefined) return { parameterCount: base, trainableParameterCount: base };
  const adapters = loraParameterCount(arch, setup.lora);
  return { parameterCount: base + adapters, trainableParameterCount: adapters };
}

// A transformer's parameter groups as the run holds them: weight format, frozen base and adapters.
import { transformerParameterCount, transformerParameterGroups, type TransformerArchitecture } from "../workload/transformer.js";
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
export function transformerStateGroups(arch: TransformerArchitecture, setup: ResolvedSetup): StateGroup[] {
  let groups: StateGroup[] = transformerParameterGroups(arch);
  if (setup.weights !== undefined) groups = quantizedGroups(arch, transformerParameterGroups(arch), setup.weights, weightBytes(setup.precision));
  const ep = setup.ep ?? 1;
  groups = expertParallelGroups(groups, arch, ep, setup.gpus);
  if (setup.lora === undefined) return groups;
  // Adapters on experts are sharded with their experts.
  const adapted = adaptedLinears(arch, setup.lora);
  const adapterCount = (expert: boolean) => adapted.filter((l) => l.expert === expert).reduce((sum, l) => sum + l.copies * setup.lora!.rank * (l.inFeatures + l.outFeatures), 0);
  const adapters = adapterCount(false) + Math.ceil(adapterCount(true) / ep);
  return [
    ...groups.map((g) => ({ ...g, frozen: true })),
    ...Array.from({ length: arch.layers }, (_, i) => ({ name: `layers.${i}.lora`, count: adapters, tensorParallelCount: 0, stage: `layers.${i}` })),
  ];
}

/** Parameters in all (the base and its adapters, as PEFT's "all params") and those trained (the adapters, or all of them). */
export function transformerCounts(arch: TransformerArchitecture, setup: ResolvedSetup): { parameterCount: number; trainableParameterCount: number } {
  const base = transformerParameterCount(arch);
  if (setup.lora === undefined) return { parameterCount: base, trainableParameterCount: base };
  const adapters = loraParameterCount(arch, setup.lora);
  return { parameterCount: base + adapters, trainableParameterCount: adapters };
}

// The model states a plan keeps for its whole step, summed without building the step: a floor under every batch's memory, for questions whose answer it settles.
import { VramfitError } from "../errors.js";
import type { TransformerWorkload, Workload } from "../workload/workload.js";
import { modelStateTensors } from "./modelStates.js";
import { resolveSetup, type RunSetup } from "./setup.js";
import { transformerStateGroups } from "./transformerGroups.js";

/**
 * Bytes a transformer's plan under `setup` holds from the first phase of its step to the last at
 * every batch size: its weights and optimizer states (src/plan/modelStates.ts; gradients,
 * temporaries and buffers left out), from the modelStateTensors the plan calls, so the same
 * bytes. Every allocation at any moment of the step includes them, each rounded up by the
 * allocator, so a budget whose room for allocations is below this fits no batch: advice asks that
 * of dozens of setups (ZeRO over 2 … 4096 GPUs, a shorter sequence), and most of a model too large
 * for its GPU fail it without their step being built or replayed (the tape of GPT-3's, 96 layers).
 * 0 (no floor) for other workloads and for a setup that does not apply (building its plan says why).
 */
export function wholeStepStateBytes(workload: Workload, setup: RunSetup): number {
  if (workload.kind !== "transformer") return 0;
  let known = floors.get(workload);
  if (known === undefined) floors.set(workload, (known = new Map()));
  const key = JSON.stringify(setup);
  let bytes = known.get(key);
  if (bytes === undefined) known.set(key, (bytes = stateBytes(workload, setup)));
  return bytes;
}

/** Per workload (by identity, as src/plan/planCache.ts keeps plans), each setup's floor: advice asks again for every target. */
const floors = new WeakMap<Workload, Map<string, number>>();

function stateBytes(workload: TransformerWorkload, setup: RunSetup): number {
  try {
    const resolved = resolveSetup(setup);
    const groups = transformerStateGroups(workload.architecture, resolved);
    // Without a timeline each group's states are one tensor each, where a training plan splits them
    // per parameter tensor: the same bytes (a group lists its tensors only where they sum to its
    // count, src/workload/transformer.ts withTensors), for a few hundred objects instead of GPT-3's thousands.
    let bytes = 0;
    for (const t of modelStateTensors(groups, resolved)) {
      if (t.category === "parameters" || t.category === "optimizerStates") bytes += t.fixedBytes;
    }
    return bytes;
  } catch (error) {
    if (error instanceof VramfitError) return 0;
    throw error;
  }
}

// The device evaluator: a batch fits when the plan's tensors really allocate on the GPU.
import type { Addon } from "../native/addonTypes.js";
import { allocationSizes, type MemoryPlan } from "../plan/memoryPlan.js";
import { MEASURED_DEVICE, plannedBytes } from "./allocator.js";
import type { FitsFunction } from "./search.js";

export interface DeviceFits {
  fits: FitsFunction;
  /** How many probes reached the device so far. */
  probes(): number;
}

/**
 * Probes the plan at a batch size on device `ordinal`. A batch whose rounded bytes exceed the
 * budget is refused without a probe, so a probe never takes more than free − reserve (or
 * --max-mem); one within the budget is allocated for real, which catches what the model cannot
 * see (fragmentation, other processes, the driver's own rounding).
 */
export function deviceFits(
  addon: Addon,
  ordinal: number,
  plan: MemoryPlan,
  budgetBytes: number,
  touch: boolean,
): DeviceFits {
  let probes = 0;
  return {
    fits: async (batch) => {
      if (plannedBytes(plan, batch, MEASURED_DEVICE) > budgetBytes) return false;
      probes += 1;
      const result = await addon.probe(ordinal, allocationSizes(plan, batch), { touch });
      return result.fits;
    },
    probes: () => probes,
  };
}

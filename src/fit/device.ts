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
 *
 * `signal` cancels a probe in flight too: the addon stops before its next allocation, frees what
 * it holds, and the promise rejects with the signal's reason.
 */
export function deviceFits(
  addon: Addon,
  ordinal: number,
  plan: MemoryPlan,
  budgetBytes: number,
  touch: boolean,
  signal?: AbortSignal,
): DeviceFits {
  let probes = 0;
  return {
    fits: async (batch) => {
      if (plannedBytes(plan, batch, MEASURED_DEVICE) > budgetBytes) return false;
      signal?.throwIfAborted();
      probes += 1;
      if (signal === undefined) return (await addon.probe(ordinal, allocationSizes(plan, batch), { touch })).fits;
      const cancel = new Int32Array(new SharedArrayBuffer(4));
      const raise = () => Atomics.store(cancel, 0, 1);
      signal.addEventListener("abort", raise, { once: true });
      try {
        return (await addon.probe(ordinal, allocationSizes(plan, batch), { touch, cancel })).fits;
      } catch (error) {
        if (signal.aborted && (error as { code?: string }).code === "ERR_ABORTED") throw signal.reason;
        throw error;
      } finally {
        signal.removeEventListener("abort", raise);
      }
    },
    probes: () => probes,
  };
}

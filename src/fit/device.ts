// The device evaluator: a batch fits when the driver allocations the job would make really fit on the GPU, above the floor.
import type { Addon, NativeProbeLimit, NativeProbeResult } from "../native/addonTypes.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import type { AllocConf } from "./allocConf.js";
import { deviceSteps, type AllocatorKind } from "./allocator.js";
import type { FitsFunction } from "./search.js";

/** One probe as it starts and as it ends: what progress lines and benchmarks watch. */
export type ProbeEvent =
  | { phase: "start"; ordinal: number; batch: number; bytes: number; allocations: number }
  | { phase: "end"; ordinal: number; batch: number; fits: boolean; limit: NativeProbeLimit | null };

export interface DeviceProbeOptions {
  allocator: AllocatorKind;
  /** The caching allocator's PYTORCH_CUDA_ALLOC_CONF settings (default: PyTorch's). */
  conf?: AllocConf;
  /** PyTorch's allowed_memory_maximum where the configuration sets a memory fraction (AllocatorModel's). */
  allowedBytes?: number;
  /**
   * What the budget leaves the job's allocations (budget less the job's context): the step is
   * replayed at this capacity, so its out-of-memory path (free the cache, retry) decides which
   * segments the probe holds at once. Unset: the replay with no limit.
   */
  capacityBytes?: number;
  /**
   * Free memory every probe leaves on the device: the reserve, plus the part of the job's context
   * vramfit's own context has not paid. The addon refuses the allocation that would cross it.
   */
  floorBytes: number;
  /** The most the allocations may add up to (--max-mem less the job's context); unset: no cap. */
  limitBytes?: number;
  /** Write every byte and synchronize (default true in the library). */
  touch: boolean;
  /** Map expandable segments' pages through the driver's virtual-memory API (default true in the library; DeviceSearchOptions'). */
  virtualMemory?: boolean;
  /** Cancels a probe in flight: the addon stops before its next allocation and frees what it holds. */
  signal?: AbortSignal;
  onProbe?: (event: ProbeEvent) => void;
}

export interface DeviceFits {
  fits: FitsFunction;
  /** How many probes reached the device so far. */
  probes(): number;
}

/**
 * Re-probes of one batch after the device gave less room than the replay assumed. One suffices
 * where the device's room holds still (the addon measures it to 2 MiB); more absorb another
 * process allocating meanwhile.
 */
const MAX_RETRIES = 4;

/** Probes this process has started on any device: an interrupted CLI says every probe freed its memory only when there was one. */
let probesStarted = 0;
export function probesStartedInThisProcess(): number {
  return probesStarted;
}

/**
 * Probes the plan at a batch size on device `ordinal`: the driver calls of the step's replay at
 * `capacityBytes` (segments allocated in order, cached ones given back where the out-of-memory
 * path frees them; for expandable segments the pages, for raw the tensors at the peak), within
 * the floor and the cap the addon enforces. Where the driver refuses an allocation the replay
 * counted on, the step is replayed again at the room the device gave and probed again (see fits).
 * No batch is refused before the device is asked (but where the job's own per_process_memory_fraction
 * stops the step: PyTorch's limit, not the device's), so where the device packs better than the model
 * (a finer allocation granularity), the search's
 * upward probes find it.
 */
export function deviceFits(addon: Addon, ordinal: number, plan: MemoryPlan, options: DeviceProbeOptions): DeviceFits {
  let probes = 0;
  const { signal, onProbe } = options;
  const native = {
    touch: options.touch,
    reserveBytes: options.floorBytes,
    ...(options.limitBytes !== undefined && { limitBytes: Math.max(0, options.limitBytes) }),
  };
  /** One probe of the step's driver calls: every allocation freed before it settles. */
  const probeOnce = async (batch: number, { sizes, releases, pageBytes }: { sizes: readonly number[]; releases: readonly number[]; pageBytes?: readonly number[] }): Promise<NativeProbeResult> => {
    probes += 1;
    probesStarted += 1;
    onProbe?.({ phase: "start", ordinal, batch, bytes: peakHeldBytes(sizes, releases), allocations: sizes.length });
    let result: NativeProbeResult | undefined;
    const cancel = signal === undefined ? undefined : new Int32Array(new SharedArrayBuffer(4));
    const raise = () => Atomics.store(cancel!, 0, 1);
    signal?.addEventListener("abort", raise, { once: true });
    try {
      // Sizes as a Float64Array: the addon reads it in one pass (an array is one napi call per element).
      const steps = { ...native, ...(releases.length > 0 && { releases: [...releases] }), ...(pageBytes !== undefined && options.virtualMemory !== false && { pageBytes: Float64Array.from(pageBytes) }) };
      result = await addon.probe(ordinal, Float64Array.from(sizes), cancel === undefined ? steps : { ...steps, cancel });
    } catch (error) {
      if (signal?.aborted && (error as { code?: string }).code === "ERR_ABORTED") throw signal.reason;
      throw error;
    } finally {
      signal?.removeEventListener("abort", raise);
      onProbe?.({ phase: "end", ordinal, batch, fits: result?.fits ?? false, limit: result?.limit ?? null });
    }
    return result;
  };
  return {
    fits: async (batch) => {
      // The replay at the budget's capacity first; where the device gives less than that (its free
      // figure overstates what cuMemAlloc grants: other processes, the driver's granularity, its
      // heap's fragmentation), the step is replayed again at the room the device really gave, so
      // PyTorch's out-of-memory path frees its cache where the real driver refused, and re-probed.
      // Each retry's capacity is lower than the last, so this ends: the probe completes (fits), or
      // the replay itself runs out of memory at the device's room (does not fit).
      let capacityBytes = options.capacityBytes;
      for (let attempt = 0; ; attempt++) {
        signal?.throwIfAborted();
        const steps = deviceSteps(plan, batch, options.allocator, options.conf, capacityBytes, options.allowedBytes);
        if (steps.refused === true) return false;
        if (attempt > 0 && !steps.atCapacity) return false;
        const result = await probeOnce(batch, steps);
        if (result.fits) return true;
        const given = result.allocatedBytes + result.headroomBytes;
        if (!steps.atCapacity || attempt >= MAX_RETRIES || capacityBytes === undefined || !(given < capacityBytes)) return false;
        capacityBytes = given;
      }
    },
    probes: () => probes,
  };
}

/** The most the probe holds at once: every size in order, less what `releases` gave back before it. */
function peakHeldBytes(sizes: readonly number[], releases: readonly number[]): number {
  let held = 0;
  let peak = 0;
  let r = 0;
  for (let i = 0; i < sizes.length; i++) {
    for (; r < releases.length && releases[r] === i; r += 2) held -= sizes[releases[r + 1]!]!;
    held += sizes[i]!;
    if (held > peak) peak = held;
  }
  return peak;
}

// The peak device memory of a running job, sampled through NVML (no CUDA context of vramfit's):
// the memory NVML lists for the job's processes, or, where NVML lists none of them, the rise of
// the device's used memory over what it was before the run.
import type { NvmlDevice } from "../native/addonTypes.js";
import { uuidKey } from "../devices/nvmlMatch.js";
import { jobMembership } from "./processTree.js";

/**
 * Where a run's peak comes from: `nvml-process` (NVML's per-process memory, summed over the job's
 * processes), `device-used` (the device's used memory less its value before the run: anything
 * else allocating meanwhile counts too), `job` (the job's VRAMFIT_PEAK_BYTES line), `none`.
 */
export type PeakSource = "nvml-process" | "device-used" | "job" | "simulated-gpu" | "none";

export interface PeakReading {
  peakBytes: number | null;
  source: PeakSource;
}

/** What the sampler reads: NVML's device list (the addon's nvmlDevices). */
export type NvmlReader = () => Promise<NvmlDevice[]>;

/** How often NVML is asked while a job runs. A step's peak lasts far longer on a real GPU. */
export const SAMPLE_INTERVAL_MS = 10;

export interface PeakSampling {
  /** Stops sampling (after the sample in flight) and returns the peak over the job's devices. */
  stop(): Promise<PeakReading>;
}

/** The devices' used bytes now, by UUID (null where NVML has no reading): the baseline of a run. */
export async function usedBytesNow(read: NvmlReader, uuids: readonly string[]): Promise<(number | null)[]> {
  const list = await read();
  return uuids.map((uuid) => findDevice(list, uuid)?.memory?.usedBytes ?? null);
}

function findDevice(list: readonly NvmlDevice[], uuid: string): NvmlDevice | undefined {
  const key = uuidKey(uuid);
  return key === undefined ? undefined : list.find((d) => uuidKey(d.uuid) === key);
}

/**
 * Samples until stopped. `baseline` is each device's used bytes before the run (usedBytesNow).
 * A failed NVML call ends sampling quietly: the run goes on, and its peak is what was seen.
 */
export function samplePeaks(read: NvmlReader, uuids: readonly string[], rootPid: number, baseline: readonly (number | null)[], intervalMs = SAMPLE_INTERVAL_MS): PeakSampling {
  const inJob = jobMembership(rootPid);
  const processPeak: (number | null)[] = uuids.map(() => null);
  const usedPeak: (number | null)[] = uuids.map(() => null);
  let stopped = false;
  let wake: (() => void) | undefined;

  const sampleOnce = async (): Promise<void> => {
    const list = await read();
    uuids.forEach((uuid, i) => {
      const device = findDevice(list, uuid);
      if (device === undefined) return;
      const mine = (device.processes ?? []).filter((p) => inJob(p.pid));
      if (mine.length > 0) {
        const bytes = mine.reduce((sum, p) => sum + (p.usedBytes ?? 0), 0);
        processPeak[i] = Math.max(processPeak[i] ?? 0, bytes);
      }
      if (device.memory !== null) usedPeak[i] = Math.max(usedPeak[i] ?? 0, device.memory.usedBytes);
    });
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        await sampleOnce();
      } catch {
        return;
      }
      if (stopped) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();

  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      return combine(processPeak, usedPeak, baseline);
    },
  };
}

/** One reading for the job: its largest device's, NVML's per-process figure where every device has one. */
function combine(processPeak: readonly (number | null)[], usedPeak: readonly (number | null)[], baseline: readonly (number | null)[]): PeakReading {
  if (processPeak.every((bytes) => bytes !== null)) return { peakBytes: Math.max(...(processPeak as number[])), source: "nvml-process" };
  const rises = usedPeak.map((used, i) => (used === null || baseline[i] === null || baseline[i] === undefined ? null : Math.max(0, used - baseline[i]!)));
  // No rise at all is no measurement: the job ended (or failed) between two samples.
  if (rises.every((bytes) => bytes !== null) && rises.some((bytes) => bytes! > 0)) return { peakBytes: Math.max(...(rises as number[])), source: "device-used" };
  return { peakBytes: null, source: "none" };
}

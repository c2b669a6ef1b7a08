// The GPUs a job runs on: chosen by CUDA ordinal, named to the job by UUID, their free memory read
// through NVML so that vramfit holds no CUDA context while the job runs, and locked for the search.
import { VramfitError } from "../errors.js";
import { lockDevice, type DeviceLock, type DeviceLockOptions } from "../devices/deviceLock.js";
import { matchDevices } from "../devices/inventory.js";
import { usableMemory } from "../devices/nvmlMatch.js";
import { settleAll } from "../devices/perDevice.js";
import { selectDevices } from "../fit/resolveTargets.js";
import { deviceSummary, type DeviceSummary } from "../fit/target.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import { openBackend, openNvml, type NvmlBackend } from "../native/binding.js";
import type { NvmlReader } from "./peakSampler.js";

export interface JobDevice {
  device: NativeDevice;
  /** The UUID the job is given in CUDA_VISIBLE_DEVICES (a MIG instance's MIG- UUID where NVML knows it). */
  uuid: string;
  freeBytes: number;
  /** Who read the free memory: NVML (no context), or CUDA (a context, released before the job runs). */
  memorySource: "nvml" | "cuda";
}

export interface JobDevices {
  addon: Addon;
  selected: NativeDevice[];
  nvml: NvmlBackend;
}

/** The selected devices: a CUDA ordinal (default 0), a GPU-/MIG- UUID, `all`, or a list of ordinals and UUIDs. */
export type DeviceChoice = number | string | readonly (number | string)[];

function choose(all: NativeDevice[], choice: DeviceChoice = 0): NativeDevice[] {
  if (choice === "all") return all;
  const wanted = Array.isArray(choice) ? [...choice] : [choice as number | string];
  // A UUID, any case, or a prefix naming one device, as for the probes (and CUDA_VISIBLE_DEVICES).
  return wanted.map((id) => selectDevices(all, id)[0]!);
}

/** The driver, the selected devices and NVML. Throws ERR_GPU_REQUIRED where no GPU is usable. */
export async function jobDevices(choice: DeviceChoice | undefined): Promise<JobDevices> {
  const backend = await openBackend();
  if (backend.kind === "none") throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU to run the job on: ${backend.reason}; --gpu ID runs it on a simulated catalog GPU`);
  return { addon: backend.addon, selected: choose(await backend.addon.devices(), choice), nvml: await openNvml() };
}

/** NVML's device list for the peak sampler; undefined when NVML is not usable. */
export function nvmlReader(resolved: JobDevices): NvmlReader | undefined {
  const { nvml } = resolved;
  return nvml.kind === "nvml" ? () => nvml.addon.nvmlDevices() : undefined;
}

/**
 * Each device's free memory now. NVML answers without a context; a device NVML cannot read is
 * read through CUDA, and that context is released at once, so the job finds the memory free.
 */
export async function measureFree(resolved: JobDevices): Promise<JobDevice[]> {
  const { addon, selected } = resolved;
  const matches = await matchDevices(selected, resolved.nvml);
  return settleAll(
    selected.map(async (device, i): Promise<JobDevice> => {
      const match = matches[i]!;
      if (match.kind === "nvml") return { device, uuid: match.uuid, freeBytes: usableMemory(match.memory).freeBytes, memorySource: "nvml" };
      const { freeBytes } = await addon.memGetInfo(device.ordinal);
      await addon.releaseDevice(device.ordinal);
      return { device, uuid: device.uuid, freeBytes, memorySource: "cuda" };
    }),
  );
}

export function jobDeviceSummary(d: JobDevice): DeviceSummary {
  return { ...deviceSummary(d.device, d.freeBytes), uuid: d.uuid };
}

/**
 * Locks every device for the whole search (the same lock as the probes'), in UUID order so that
 * two searches over overlapping sets cannot each hold one and wait for the other, and releases
 * them however `work` ends.
 */
export async function withJobDevicesLocked<T>(resolved: JobDevices, options: DeviceLockOptions | false | undefined, work: () => Promise<T>): Promise<T> {
  const locks: DeviceLock[] = [];
  try {
    if (options !== false) {
      for (const device of [...resolved.selected].sort((a, b) => a.uuid.localeCompare(b.uuid))) {
        locks.push(await lockDevice(resolved.addon, device, options ?? {}));
      }
    }
    return await work();
  } finally {
    for (const lock of locks) lock.release();
  }
}

// The visible devices with their memory now: what `vramfit info` and benchmark scripts report.
//
// NVML answers first, because it needs no CUDA context (a context costs hundreds of MiB of device
// memory and hundreds of milliseconds); CUDA answers for any device NVML cannot (no NVML, an
// integrated GPU, a failed query), and each device says which one did.
import type { Addon, NativeDevice, NvmlDevice } from "../native/addonTypes.js";
import type { NvmlBackend } from "../native/binding.js";
import { matchNvml, usableMemory, type NvmlMatch } from "./nvmlMatch.js";
import { perDeviceOutcomes } from "./perDevice.js";

/** A process using a device: from NVML, so only where NVML answered. */
export interface ProcessUsage {
  pid: number;
  /** null when NVML cannot tell (e.g. a process in another container). */
  usedBytes: number | null;
}

/** A device whose memory was read. */
export interface DeviceReading extends NativeDevice {
  freeBytes: number;
  /** total − free: memory held by every process (this one's context included, when it has one). */
  usedBytes: number;
  /** Who measured: NVML (no context created) or CUDA (`cuMemGetInfo` in the primary context). */
  memorySource: "nvml" | "cuda";
  /** Why CUDA answered, when NVML was asked and could not; null otherwise. */
  memorySourceReason: string | null;
  /** What the driver and firmware reserve (NVML v2); null when unknown. */
  reservedBytes: number | null;
  /** Processes with a CUDA context on the device (NVML); null when unknown. */
  processes: ProcessUsage[] | null;
  error: null;
}

/** A device the driver lists but could not read (fallen off the bus, a failing call): its error, as nvidia-smi marks it. */
export interface DeviceFailure extends NativeDevice {
  freeBytes: null;
  usedBytes: null;
  memorySource: null;
  memorySourceReason: null;
  reservedBytes: null;
  processes: ProcessUsage[] | null;
  /** The failure, its code (`ERR_CUDA_<NAME>`, `ERR_NVML_<NAME>`) and one line naming the device and the call. */
  error: { code: string; message: string };
}

/** One visible device in `vramfit info` and `devices()`: read, or failed with its error. */
export type DeviceReport = DeviceReading | DeviceFailure;

/** NVML's device list, or why there is none. Never throws. */
export async function nvmlDeviceList(nvml: NvmlBackend | undefined): Promise<NvmlDevice[] | { reason: string }> {
  if (nvml === undefined) return { reason: "NVML not asked" };
  if (nvml.kind === "none") return { reason: nvml.reason };
  try {
    return await nvml.addon.nvmlDevices();
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

/** Matches every CUDA device to NVML's list (or records why it cannot be). */
export async function matchDevices(devices: readonly NativeDevice[], nvml: NvmlBackend | undefined): Promise<NvmlMatch[]> {
  const list = await nvmlDeviceList(nvml);
  return devices.map((device) => ("reason" in list ? { kind: "cuda", reason: list.reason } : matchNvml(device, list)));
}

export function processesOf(match: NvmlMatch): ProcessUsage[] | null {
  const processes = match.device?.processes ?? null;
  return processes === null ? null : processes.map(({ pid, usedBytes }) => ({ pid, usedBytes }));
}

/**
 * Every visible device with its memory now. A device whose reading fails with a driver or NVML
 * error is listed with that error rather than hiding the others (any other error is thrown).
 */
export async function inventory(addon: Addon, nvml?: NvmlBackend): Promise<DeviceReport[]> {
  const devices = await addon.devices();
  const matches = await matchDevices(devices, nvml);
  const outcomes = await perDeviceOutcomes(devices, (device, i) => readDevice(addon, device, matches[i]!, nvml));
  return outcomes.map((outcome, i): DeviceReport => {
    if (outcome.ok) return outcome.value;
    const device = devices[i]!;
    return {
      ...device,
      freeBytes: null,
      usedBytes: null,
      memorySource: null,
      memorySourceReason: null,
      reservedBytes: null,
      processes: processesOf(matches[i]!),
      error: { code: outcome.error.code, message: outcome.error.message },
    };
  });
}

async function readDevice(addon: Addon, device: NativeDevice, match: NvmlMatch, nvml: NvmlBackend | undefined): Promise<DeviceReading> {
  const processes = processesOf(match);
  if (match.kind === "nvml") {
    const { totalBytes, freeBytes } = usableMemory(match.memory);
    return {
      ...device,
      uuid: match.uuid, // a MIG instance's MIG- UUID, which CUDA_VISIBLE_DEVICES accepts
      totalBytes,
      freeBytes,
      usedBytes: totalBytes - freeBytes,
      memorySource: "nvml",
      memorySourceReason: null,
      reservedBytes: match.memory.reservedBytes,
      processes,
      error: null,
    };
  }
  const { freeBytes, totalBytes } = await addon.memGetInfo(device.ordinal);
  return {
    ...device,
    totalBytes,
    freeBytes,
    usedBytes: totalBytes - freeBytes,
    memorySource: "cuda",
    memorySourceReason: nvml === undefined ? null : match.reason,
    reservedBytes: null,
    processes,
    error: null,
  };
}

/** `cuDriverGetVersion`'s 12040 as `12.4`. */
export function formatDriverVersion(version: number): string {
  return `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;
}

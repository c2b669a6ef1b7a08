// A device's memory as a probe may use it — free memory, and what vramfit's own context took of it — read under the device's cross-process lock.
import { lockDevice, type DeviceLock, type DeviceLockOptions } from "../devices/deviceLock.js";
import { matchDevices, nvmlDeviceList } from "../devices/inventory.js";
import { matchNvml, usableMemory } from "../devices/nvmlMatch.js";
import { memAvailableBytes } from "../devices/systemMemory.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import type { NvmlBackend } from "../native/binding.js";

export interface DeviceAccessOptions {
  signal?: AbortSignal;
  /** The cross-process lock (default: taken, with its defaults); false to probe unlocked. */
  lock?: DeviceLockOptions | false;
}

/** The device's memory with vramfit's context live, as the search starts from it. */
export interface DeviceReading {
  /** `cuMemGetInfo`'s free bytes, capped by MemAvailable on an integrated GPU: what a probe may take. */
  freeBytes: number;
  /** `cuMemGetInfo`'s free bytes as the driver reports them (the addon's reserve floor is held against these). */
  driverFreeBytes: number;
  totalBytes: number;
  /**
   * What vramfit's own context holds on the device, as NVML lists this process; 0 when NVML
   * cannot say (no NVML, another PID namespace), which charges the job's whole context on top.
   */
  ownContextBytes: number;
}

/**
 * `cuMemGetInfo`'s free bytes; on an integrated GPU (device memory is system memory) no more than
 * the OS can give now, /proc/meminfo's MemAvailable: the driver's figure can count memory the
 * kernel cannot hand over without swapping, and probing past it would push the host into swap.
 * Then what this process holds on the device according to NVML: vramfit's context (the read above
 * created it if it did not exist), which NVML's per-process figure counts and the job gets back.
 */
export async function readDevice(addon: Addon, device: NativeDevice, nvml?: NvmlBackend): Promise<DeviceReading> {
  const { freeBytes: driverFreeBytes, totalBytes } = await addon.memGetInfo(device.ordinal);
  const available = device.integrated ? memAvailableBytes() : undefined;
  const freeBytes = available === undefined ? driverFreeBytes : Math.min(driverFreeBytes, available);
  return { freeBytes, driverFreeBytes, totalBytes, ownContextBytes: await ownContextBytes(device, nvml) };
}

async function ownContextBytes(device: NativeDevice, nvml: NvmlBackend | undefined): Promise<number> {
  if (nvml === undefined) return 0;
  const list = await nvmlDeviceList(nvml);
  if ("reason" in list) return 0;
  const match = matchNvml(device, list);
  return match.device?.processes?.find((p) => p.pid === process.pid)?.usedBytes ?? 0;
}

/** Runs `work` holding the device's lock (see devices/deviceLock), releasing it however work ends. */
export async function withDeviceLock<T>(addon: Addon, device: NativeDevice, options: DeviceAccessOptions, work: () => Promise<T>): Promise<T> {
  options.signal?.throwIfAborted();
  const lock: DeviceLock | undefined =
    options.lock === false
      ? undefined
      : await lockDevice(addon, device, { ...options.lock, ...(options.signal !== undefined && { signal: options.signal }) });
  try {
    return await work();
  } finally {
    lock?.release();
  }
}

/**
 * The device's free memory read through NVML, which needs no CUDA context (a context costs
 * hundreds of MiB on a GPU that may be nearly full), or why NVML cannot say.
 */
export async function readWithoutContext(device: NativeDevice, nvml: NvmlBackend | undefined): Promise<{ freeBytes: number; uuid: string } | { reason: string }> {
  const [match] = await matchDevices([device], nvml);
  if (match!.kind !== "nvml") return { reason: match!.reason };
  return { freeBytes: usableMemory(match!.memory).freeBytes, uuid: match!.uuid };
}

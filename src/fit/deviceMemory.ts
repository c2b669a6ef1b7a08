// A device's free memory as a probe may use it, read under the device's cross-process lock.
import { lockDevice, type DeviceLock, type DeviceLockOptions } from "../devices/deviceLock.js";
import { memAvailableBytes } from "../devices/systemMemory.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";

export interface DeviceAccessOptions {
  signal?: AbortSignal;
  /** The cross-process lock (default: taken, with its defaults); false to probe unlocked. */
  lock?: DeviceLockOptions | false;
}

/**
 * `cuMemGetInfo`'s free bytes; on an integrated GPU (device memory is system memory) no more than
 * the OS can give now, /proc/meminfo's MemAvailable: the driver's figure can count memory the
 * kernel cannot hand over without swapping, and probing past it would push the host into swap.
 */
export async function freeBytesForProbe(addon: Addon, device: NativeDevice): Promise<number> {
  const { freeBytes } = await addon.memGetInfo(device.ordinal);
  if (!device.integrated) return freeBytes;
  const available = memAvailableBytes();
  return available === undefined ? freeBytes : Math.min(freeBytes, available);
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

// Work on every device at once, with every device's work settled before an error is thrown.
import { VramfitError } from "../errors.js";
import type { NativeDevice } from "../native/addonTypes.js";

/**
 * Waits for every promise, then returns the values or throws the first rejection. Unlike
 * Promise.all, nothing is left running when it throws: a probe still holding memory on one GPU is
 * not orphaned by a failure on another, and a CLI exits only after it has freed.
 */
export async function settleAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * `work` on every device at once (the addon gives each its own thread), settled as settleAll
 * does; a driver or NVML failure says which device it was on.
 */
export function perDevice<T>(devices: readonly NativeDevice[], work: (device: NativeDevice, index: number) => Promise<T>): Promise<T[]> {
  return settleAll(devices.map((device, i) => work(device, i).catch((error: unknown) => Promise.reject(onDevice(device, error)))));
}

/** A device's own failure (its driver or NVML calls failed): reported on its row, the other devices still answer. */
export function isDeviceFailure(error: unknown): error is VramfitError {
  return error instanceof VramfitError && /^ERR_(CUDA|NVML)_/.test(error.code);
}

/** One device's outcome: its value, or the driver failure that stopped it. */
export type DeviceOutcome<T> = { ok: true; value: T } | { ok: false; error: VramfitError };

/**
 * `work` on every device at once, like perDevice, but a device whose driver fails gives its
 * failure instead of failing the whole: nvidia-smi lists the healthy GPUs beside a lost one.
 * Any other error (bad input, an interruption, a lock timeout) is still thrown, once all settled.
 */
export function perDeviceOutcomes<T>(devices: readonly NativeDevice[], work: (device: NativeDevice, index: number) => Promise<T>): Promise<DeviceOutcome<T>[]> {
  return outcomesOf(devices.map((device, i) => work(device, i).catch((error: unknown) => Promise.reject(onDevice(device, error)))));
}

/** Settles every promise: each value, or its driver failure; any other error is thrown once all settled. */
export async function outcomesOf<T>(promises: readonly Promise<T>[]): Promise<DeviceOutcome<T>[]> {
  const settled = await Promise.allSettled(promises);
  const fatal = settled.find((s): s is PromiseRejectedResult => s.status === "rejected" && !isDeviceFailure(s.reason));
  if (fatal) throw fatal.reason;
  return settled.map((s) => (s.status === "fulfilled" ? { ok: true, value: s.value } : { ok: false, error: s.reason as VramfitError }));
}

/** The error with the device it happened on in its message (once). */
export function onDevice(device: Pick<NativeDevice, "ordinal" | "uuid">, error: unknown): unknown {
  if (!isDeviceFailure(error)) return error;
  const prefix = `device ${device.ordinal} (${device.uuid}): `;
  if (error.message.startsWith(prefix)) return error;
  return new VramfitError(error.code, `${prefix}${error.message}`, {
    ...(error.cudaCode !== undefined && { cudaCode: error.cudaCode }),
    ...(error.nvmlCode !== undefined && { nvmlCode: error.nvmlCode }),
    ...(error.call !== undefined && { call: error.call }),
  });
}

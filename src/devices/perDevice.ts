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

function onDevice(device: NativeDevice, error: unknown): unknown {
  if (!(error instanceof VramfitError) || !/^ERR_(CUDA|NVML)_/.test(error.code)) return error;
  return new VramfitError(error.code, `device ${device.ordinal} (${device.uuid}): ${error.message}`, {
    ...(error.cudaCode !== undefined && { cudaCode: error.cudaCode }),
    ...(error.nvmlCode !== undefined && { nvmlCode: error.nvmlCode }),
    ...(error.call !== undefined && { call: error.call }),
  });
}

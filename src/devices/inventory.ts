// The visible devices with their memory now: what `vramfit info` and benchmark scripts report.
import type { Addon, NativeDevice } from "../native/addonTypes.js";

export interface DeviceReport extends NativeDevice {
  freeBytes: number;
  /** total − free: memory held by every process, this one's context included. */
  usedBytes: number;
}

export async function inventory(addon: Addon): Promise<DeviceReport[]> {
  const devices = await addon.devices();
  return Promise.all(
    devices.map(async (device) => {
      const { freeBytes, totalBytes } = await addon.memGetInfo(device.ordinal);
      return { ...device, totalBytes, freeBytes, usedBytes: totalBytes - freeBytes };
    }),
  );
}

/** `cuDriverGetVersion`'s 12040 as `12.4`. */
export function formatDriverVersion(version: number): string {
  return `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;
}

// How the CLI touches devices: the lock's messages, and the warning when other processes are using a GPU.
import { DEFAULT_LOCK_TIMEOUT_MS, formatSeconds } from "../devices/deviceLock.js";
import { matchDevices, processesOf } from "../devices/inventory.js";
import { formatBytes, type DeviceLockOptions, type DeviceTarget, type Target } from "../index.js";
import type { Io } from "./io.js";

/** The lock and the interruption signal, with the lock's wait and failure said on stderr. */
export function deviceAccess(lockTimeoutMs: number | undefined, io: Io): { signal?: AbortSignal; lock: DeviceLockOptions } {
  const timeoutMs = lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  return {
    ...(io.signal !== undefined && { signal: io.signal }),
    lock: {
      timeoutMs,
      onWait: (pid) =>
        io.err(`another vramfit process${pid === undefined ? "" : ` (pid ${pid})`} is probing this device; waiting up to ${formatSeconds(timeoutMs)} (--lock-timeout)`),
      onUnlocked: (reason) => io.err(`warning: ${reason}; probing without the cross-process lock`),
    },
  };
}

/**
 * One warning per device that other processes use (from NVML, so no context is created for it);
 * nothing when NVML cannot say. The answer is for the memory free now, and every probe keeps the
 * reserve free, so their allocations still have room while it runs.
 */
export async function warnIfBusy(targets: readonly Target[], reserve: string, io: Io): Promise<void> {
  const devices = targets.filter((t): t is DeviceTarget => t.kind === "device");
  if (devices.length === 0) return;
  // NVML's list read once for every device, as deviceProcesses reads it for one (and the driver's
  // list of devices with it): with eight GPUs, one of each rather than eight.
  const matches = await matchDevices(devices.map((t) => t.device), devices[0]!.nvml);
  for (const [i, { device }] of devices.entries()) {
    const others = (processesOf(matches[i]!) ?? []).filter((p) => p.pid !== process.pid);
    if (others.length === 0) continue;
    const known = others.filter((p) => p.usedBytes !== null).reduce((sum, p) => sum + p.usedBytes!, 0);
    const list = others.map((p) => `pid ${p.pid}${p.usedBytes === null ? "" : ` ${formatBytes(p.usedBytes)}`}`).join(", ");
    io.err(
      `warning: device ${device.ordinal} (${device.name}) is in use by ${others.length} other process${others.length === 1 ? "" : "es"} ` +
        `holding ${formatBytes(known)} (${list}); the answer is for the memory free now, and every probe leaves ${reserve} free for them`,
    );
  }
}

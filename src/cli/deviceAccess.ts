// How the CLI touches devices: the lock's messages, check through NVML or a probe, and the
// warning when other processes are using a GPU.
import { DEFAULT_LOCK_TIMEOUT_MS, formatSeconds } from "../devices/deviceLock.js";
import { matchDevices, processesOf } from "../devices/inventory.js";
import { perDevice } from "../devices/perDevice.js";
import { usableMemory } from "../devices/nvmlMatch.js";
import type { BudgetLimits } from "../fit/budget.js";
import { checkOnDevice, checkOnNvml, type CheckResult } from "../fit/checkFits.js";
import type { DeviceAccessOptions } from "../fit/deviceMemory.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { openNvml } from "../native/binding.js";
import { formatBytes } from "../units.js";
import type { Io } from "./io.js";

/** The lock and the interruption signal, with the lock's wait and failure said on stderr. */
export function deviceAccess(lockTimeoutMs: number | undefined, io: Io): DeviceAccessOptions {
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
 * nothing when NVML cannot say. The answer is still right for the memory free now, but that
 * memory may not stay free.
 */
export async function warnIfBusy(devices: readonly NativeDevice[], io: Io): Promise<void> {
  const matches = await matchDevices(devices, await openNvml());
  devices.forEach((device, i) => {
    const others = (processesOf(matches[i]!) ?? []).filter((p) => p.pid !== process.pid);
    if (others.length === 0) return;
    const known = others.filter((p) => p.usedBytes !== null).reduce((sum, p) => sum + p.usedBytes!, 0);
    const list = others.map((p) => `pid ${p.pid}${p.usedBytes === null ? "" : ` ${formatBytes(p.usedBytes)}`}`).join(", ");
    io.err(
      `warning: device ${device.ordinal} (${device.name}) is in use by ${others.length} other process${others.length === 1 ? "" : "es"} ` +
        `holding ${formatBytes(known)} (${list}); the answer is for the memory free now`,
    );
  });
}

export interface DeviceCheckOptions {
  limits: BudgetLimits;
  touch: boolean;
  lockTimeoutMs: number | undefined;
  /** A raw `--need SIZE`: answered from NVML where it can, with no CUDA context and no probe. */
  needOnly: boolean;
}

/**
 * `vramfit check` on devices. `--need` asks only "is that much free?", which NVML answers without
 * a context (hundreds of MiB, on a GPU that may be nearly full); a device NVML cannot answer for,
 * and every workload check, gets one probe instead.
 */
export async function checkDevices(addon: Addon, devices: readonly NativeDevice[], plan: MemoryPlan, batch: number, options: DeviceCheckOptions, io: Io): Promise<CheckResult[]> {
  const matches = options.needOnly ? await matchDevices(devices, await openNvml()) : undefined;
  const access = deviceAccess(options.lockTimeoutMs, io);
  return perDevice(devices, async (device, i) => {
    const match = matches?.[i];
    if (match?.kind === "nvml") {
      return checkOnNvml({ ...device, uuid: match.uuid }, usableMemory(match.memory).freeBytes, plan, batch, options.limits);
    }
    return checkOnDevice(addon, device, plan, batch, { ...options.limits, ...access, touch: options.touch });
  });
}

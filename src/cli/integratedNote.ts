// Why an integrated GPU's budget is below the free memory `vramfit info` shows: said where either appears.
import { memAvailableBytes } from "../devices/systemMemory.js";
import { formatBytes } from "../units.js";
import type { NativeDevice, Target } from "../index.js";

/** What the note needs of a device (a NativeDevice or an info row has it). */
interface DeviceLike {
  ordinal: number;
  name: string;
  integrated?: boolean;
}

/**
 * One line per integrated device (Jetson: its memory is system memory): probes and budgets never
 * go past the OS's MemAvailable, which the driver's free memory (info's `free`) does not apply, so
 * the two figures differ and neither is wrong. Empty for discrete GPUs, and then /proc/meminfo is
 * not read: `available` is read only where a note says it (every `batch` and `check` on a
 * discrete GPU or a catalog one read and parsed it for nothing).
 */
export function integratedNotes(devices: readonly DeviceLike[], available?: number): string[] {
  const integrated = devices.filter((d) => d.integrated === true);
  if (integrated.length === 0) return [];
  const memAvailable = available ?? memAvailableBytes(); // undefined: read now, as the default parameter did
  const cap = memAvailable === undefined ? "MemAvailable (unknown here)" : `MemAvailable, ${formatBytes(memAvailable)} now`;
  return integrated
    .map(
      (d) =>
        `note: device ${d.ordinal} (${d.name}) is integrated, its memory is system memory: batch and check never budget past the OS's ${cap} ` +
        "(/proc/meminfo), which the driver's free memory in `vramfit info` does not take into account",
    );
}

/** The devices among resolved targets that are probed (an `--analytic` reading applies no cap). */
export function deviceList(targets: readonly Target[]): NativeDevice[] {
  return targets.flatMap((t) => (t.kind === "device" ? [t.device] : []));
}

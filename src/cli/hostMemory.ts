// Host memory for offloaded states: --host-memory SIZE, or MemAvailable from /proc/meminfo (read here, at the CLI's edge).
import { memAvailableBytes } from "../devices/systemMemory.js";

export interface HostBudget {
  bytes: number;
  /** `--host-memory`, or `MemAvailable` (/proc/meminfo: what the kernel can give without swapping). */
  source: "--host-memory" | "MemAvailable";
}

/** The host budget: the option when given, else MemAvailable; undefined when neither is known (not Linux). */
export function hostBudget(optionBytes: number | undefined, readAvailable: () => number | undefined = () => memAvailableBytes()): HostBudget | undefined {
  if (optionBytes !== undefined) return { bytes: optionBytes, source: "--host-memory" };
  const bytes = readAvailable();
  return bytes === undefined ? undefined : { bytes, source: "MemAvailable" };
}

// What the OS can still give: on an integrated GPU (Jetson), device memory is system memory.
import { readFileSync } from "node:fs";
import { envSetting } from "../environment.js";

/** `MemAvailable` of a /proc/meminfo text, in bytes; undefined when absent or malformed. */
export function parseMemAvailable(text: string): number | undefined {
  const match = /^MemAvailable:\s+(\d+)\s*kB\s*$/m.exec(text);
  if (!match) return undefined;
  const bytes = Number(match[1]) * 1024;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * The kernel's estimate of memory available without swapping (MemAvailable), read now. The path
 * is `VRAMFIT_PROC_MEMINFO` when set (tests), else /proc/meminfo; undefined when unreadable.
 */
export function memAvailableBytes(path = envSetting("VRAMFIT_PROC_MEMINFO") ?? "/proc/meminfo"): number | undefined {
  try {
    return parseMemAvailable(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

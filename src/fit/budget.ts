// The bytes a job may use: free memory less the headroom (--reserve), capped by --max-mem.
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";

export interface BudgetLimits {
  /** Headroom to leave free, in bytes. Default: DEFAULT_RESERVE_PERCENT of the total. */
  reserveBytes?: number;
  /** Headroom to leave free, as a percentage (0 ≤ p < 100) of the device's total memory; not with reserveBytes. */
  reservePercent?: number;
  /** The most this job may use, its CUDA context included (default: no cap). */
  maxMemBytes?: number;
}

/**
 * The default headroom: 5% of the device's total memory (docs/memory-model.md, "Headroom"). It
 * covers what the model does not see — cuDNN's per-call workspaces, NCCL's buffers, the driver's
 * own reservations that `cuMemGetInfo` still counts as free — and leaves other processes on a
 * shared GPU room to grow while a probe holds memory. Serving stacks that size themselves from
 * GPU memory leave 8–10% by default (vLLM's gpu_memory_utilization 0.9/0.92, TensorRT-LLM's
 * free_gpu_memory_fraction 0.9); those margins also cover activations vramfit models, so it
 * keeps half of 10%.
 */
export const DEFAULT_RESERVE_PERCENT = 5;

/** `--reserve SIZE` or `--reserve N%` (of the total), as the library's limits. */
export function parseReserve(text: string, option = "--reserve"): Pick<BudgetLimits, "reserveBytes" | "reservePercent"> {
  const percent = /^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%\s*$/.exec(text);
  if (percent === null) return { reserveBytes: parseBytes(text, option) };
  const value = Number(percent[1]);
  if (!(value < 100)) throw invalidArgument(option, text, "a percentage of the total below 100%, or a size such as 2GiB");
  return { reservePercent: value };
}

/** The headroom in bytes on a device of `totalBytes`. */
export function reserveBytes(totalBytes: number, limits: BudgetLimits = {}): number {
  if (limits.reserveBytes !== undefined && limits.reservePercent !== undefined) {
    throw invalidArgument("reserveBytes/reservePercent", `${limits.reserveBytes} and ${limits.reservePercent}%`, "one reserve, in bytes or as a percentage");
  }
  if (limits.reserveBytes !== undefined) {
    if (!Number.isInteger(limits.reserveBytes) || limits.reserveBytes < 0 || limits.reserveBytes > 2 ** 53) throw invalidArgument("reserveBytes", limits.reserveBytes, "a whole number of bytes ≥ 0");
    return limits.reserveBytes;
  }
  const percent = limits.reservePercent ?? DEFAULT_RESERVE_PERCENT;
  if (!(percent >= 0 && percent < 100)) throw invalidArgument("reservePercent", percent, "a percentage from 0 to below 100");
  return Math.ceil((totalBytes * percent) / 100);
}

/** How a reserve reads to people: `5% of the total (4 GiB)`, `1 GiB`. */
export function describeReserve(limits: BudgetLimits): string | undefined {
  if (limits.reserveBytes !== undefined) return undefined;
  return `${limits.reservePercent ?? DEFAULT_RESERVE_PERCENT}% of the total`;
}

/** A device's memory as a budget sees it. */
export interface DeviceMemory {
  freeBytes: number;
  totalBytes: number;
}

/**
 * The bytes the job may use: free memory (plus `spentContextBytes`, the part of it vramfit's own
 * context took, which the job gets back) less the reserve, capped by --max-mem; 0 when the reserve
 * takes everything (a busy GPU: nothing fits, which is an answer, not bad input).
 */
export function budgetBytes(memory: DeviceMemory, limits: BudgetLimits = {}, spentContextBytes = 0): number {
  if (limits.maxMemBytes !== undefined && (!Number.isInteger(limits.maxMemBytes) || limits.maxMemBytes < 0 || limits.maxMemBytes > 2 ** 53)) {
    throw invalidArgument("maxMemBytes", limits.maxMemBytes, "a whole number of bytes ≥ 0");
  }
  const available = memory.freeBytes + spentContextBytes - reserveBytes(memory.totalBytes, limits);
  return Math.max(0, Math.min(available, limits.maxMemBytes ?? Number.POSITIVE_INFINITY));
}

// The bytes a job may use: free memory less the reserve, capped by --max-mem.
import { invalidArgument } from "../errors.js";

export interface BudgetLimits {
  /** Headroom to leave free (default 0). */
  reserveBytes?: number;
  /** The most this job may use (default: no cap). */
  maxMemBytes?: number;
}

export function budgetBytes(freeBytes: number, limits: BudgetLimits = {}): number {
  const reserve = limits.reserveBytes ?? 0;
  if (reserve > freeBytes) {
    throw invalidArgument("--reserve", reserve, `a reserve below the free memory (${freeBytes} bytes)`);
  }
  return Math.min(freeBytes - reserve, limits.maxMemBytes ?? Number.POSITIVE_INFINITY);
}

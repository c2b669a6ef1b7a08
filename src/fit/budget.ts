// The bytes a job may use: free memory less the reserve, capped by --max-mem.

export interface BudgetLimits {
  /** Headroom to leave free (default 0). */
  reserveBytes?: number;
  /** The most this job may use (default: no cap). */
  maxMemBytes?: number;
}

/**
 * free − reserve, capped by maxMem. A reserve larger than the free memory leaves a budget of 0:
 * the GPU is busy, nothing fits (exit 1), which is not bad input — the same reserve fits on an
 * idle GPU.
 */
export function budgetBytes(freeBytes: number, limits: BudgetLimits = {}): number {
  const reserve = limits.reserveBytes ?? 0;
  return Math.min(Math.max(0, freeBytes - reserve), limits.maxMemBytes ?? Number.POSITIVE_INFINITY);
}

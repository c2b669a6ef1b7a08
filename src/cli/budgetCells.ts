// The free, reserve and budget cells of an answer's row, so that they add up: free is the
// device's free memory as `vramfit info` shows it (before vramfit's own context, which the job gets
// back), and the budget is that less the reserve (or less, under --max-mem).
import { formatBytes } from "../index.js";

export interface BudgetFigures {
  device: { freeBytes: number };
  budgetBytes: number;
  reserveBytes: number;
  /** What vramfit's own context held, as NVML listed it; the budget counts the job's share of it back. */
  ownContextBytes: number;
  jobContextBytes: number;
}

export const BUDGET_HEADER = ["free", "reserve", "budget"] as const;

export function budgetCells(r: BudgetFigures): string[] {
  const free = r.device.freeBytes + Math.min(r.ownContextBytes, r.jobContextBytes);
  return [formatBytes(free), formatBytes(r.reserveBytes), formatBytes(r.budgetBytes)];
}

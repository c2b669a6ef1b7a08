// `plan --timeline`: what is live in each phase of the step at a batch, as a table and (with --svg) a chart.
import { CATEGORIES, liveRange, phasesOf, tensorBytes, type Category, type MemoryPlan } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import { renderTable } from "./table.js";

/** One phase of the step: its live bytes (tensors as planned, before allocator rounding), by category. */
export interface TimelinePoint {
  phase: string;
  bytes: number;
  byCategory: Record<Category, number>;
}

/** Every phase's live bytes at a batch, in step order. */
export function planTimeline(plan: MemoryPlan, batch: number): TimelinePoint[] {
  const phases = phasesOf(plan);
  const deltas = phases.map(() => Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>);
  const ends = [...deltas.map(() => Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>)];
  for (const t of plan.tensors) {
    const bytes = tensorBytes(t, batch);
    if (bytes <= 0) continue;
    const [first, last] = liveRange(plan, t);
    deltas[first]![t.category] += bytes;
    ends[last]![t.category] += bytes;
  }
  const running = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  return phases.map((phase, i) => {
    for (const c of CATEGORIES) running[c] += deltas[i]![c];
    const byCategory = { ...running };
    for (const c of CATEGORIES) running[c] -= ends[i]![c];
    return { phase, bytes: CATEGORIES.reduce((sum, c) => sum + byCategory[c], 0), byCategory };
  });
}

/** The stage a phase belongs to, in the direction it runs: `forward layers.3 mlp.fc` → `forward layers.3`. */
export function stageOf(phase: string): string {
  return phase.split(" ").slice(0, 2).join(" ");
}

/**
 * The table: one row per stage and direction (its most live bytes, and the op where they peak),
 * the step's peak marked. Sub-phases are folded into their stage to keep it readable.
 */
export function timelineTable(points: TimelinePoint[]): string {
  const peak = points.reduce((best, p, i) => (p.bytes > points[best]!.bytes ? i : best), 0);
  const rows: { stage: string; index: number }[] = [];
  points.forEach((p, i) => {
    const stage = stageOf(p.phase);
    const last = rows.at(-1);
    if (last === undefined || last.stage !== stage) rows.push({ stage, index: i });
    else if (p.bytes > points[last.index]!.bytes) last.index = i;
  });
  const most = points[peak]!.bytes || 1;
  const body = rows.map(({ stage, index }) => {
    const p = points[index]!;
    const op = p.phase.slice(stage.length).trim();
    const width = Math.round((30 * p.bytes) / most);
    return [stage, op, formatBytes(p.bytes), "█".repeat(width) + "·".repeat(30 - width), index === peak ? "◀ peak" : ""];
  });
  return renderTable(["phase", "at", "live", "", ""], body);
}

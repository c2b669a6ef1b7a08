// `plan --timeline --svg`: live memory over the phases of one training step, stacked by category, the peak marked.
import type { Category } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import { categoryLayers } from "./chartStyle.js";
import { niceStep } from "./memoryChart.js";
import { stageOf, type TimelinePoint } from "./planTimeline.js";

export interface TimelineChart {
  /** The plan's description (title; its first `; ` splits the title from the subtitle). */
  description: string;
  batch: number;
  points: TimelinePoint[];
  /** A budget to draw (a target's), with its label. */
  budget?: { bytes: number; label: string };
}

const WIDTH = 900;
const HEIGHT = 540;
const PLOT = { left: 80, top: 78, width: 600, height: 360 };
const GiB = 2 ** 30;

/** Bottom to top: model states, then what the batch drives. Every category, so every byte is drawn. */
const LAYERS = categoryLayers<Category>(["parameters", "optimizerStates", "gradients", "communication", "kvCache", "activations", "workspace"]);

const escape = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const px = (n: number): string => n.toFixed(1);
const trim = (n: number): string => String(Number(n.toFixed(2)));

/** The chart as a standalone SVG document. */
export function timelineChartSvg(chart: TimelineChart): string {
  const { points } = chart;
  const n = Math.max(1, points.length);
  const peak = points.reduce((best, p, i) => (p.bytes > points[best]!.bytes ? i : best), 0);
  const yWantedGiB = Math.max(points[peak]?.bytes ?? 0, (chart.budget?.bytes ?? 0) * 1.05, 1) / GiB;
  const yStep = niceStep(yWantedGiB);
  const yMax = Math.max(yStep, Math.ceil(yWantedGiB / yStep) * yStep) * GiB;
  // Each phase gets an equal slot: a step curve, so a short phase is still visible.
  const x = (phase: number) => PLOT.left + (phase / n) * PLOT.width;
  const y = (bytes: number) => PLOT.top + PLOT.height - (Math.min(bytes, yMax) / yMax) * PLOT.height;
  const out: string[] = [];
  const add = (line: string) => out.push(line);
  add(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  add(`<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`);
  const [title, ...rest] = chart.description.split("; ");
  add(`<text x="${PLOT.left}" y="28" font-size="16" font-weight="bold">${escape(title ?? "")}: one training step at batch ${chart.batch}</text>`);
  add(`<text x="${PLOT.left}" y="48" fill="#444444">${escape(rest.join("; "))}</text>`);
  for (let gib = 0; gib * GiB <= yMax + 1; gib += yStep) {
    const ty = y(gib * GiB);
    add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(ty)}" y2="${px(ty)}" stroke="#e5e5e5"/>`);
    add(`<text class="y-tick" x="${px(PLOT.left - 8)}" y="${px(ty)}" dy="4" text-anchor="end">${trim(gib)}</text>`);
  }
  // Where forward, backward and the optimizer step begin.
  const starts: { index: number; label: string }[] = [];
  points.forEach((p, i) => {
    const kind = p.phase.startsWith("forward") ? "forward" : p.phase.startsWith("backward") ? "backward" : stageOf(p.phase);
    if (starts.at(-1)?.label !== kind) starts.push({ index: i, label: kind });
  });
  for (const s of starts) {
    add(`<line x1="${px(x(s.index))}" x2="${px(x(s.index))}" y1="${px(PLOT.top)}" y2="${px(PLOT.top + PLOT.height)}" stroke="#cccccc" stroke-dasharray="3 3"/>`);
    add(`<text class="phase" x="${px(x(s.index) + 3)}" y="${px(PLOT.top + PLOT.height + 18)}">${escape(s.label)}</text>`);
  }
  let below = points.map(() => 0);
  for (const layer of LAYERS.filter((l) => points.some((p) => p.byCategory[l.key] > 0))) {
    const above = below.map((b, i) => b + points[i]!.byCategory[layer.key]);
    const edge = (values: number[]) => values.flatMap((v, i) => [`${px(x(i))},${px(y(v))}`, `${px(x(i + 1))},${px(y(v))}`]);
    add(`<polygon class="layer" data-category="${layer.key}" points="${[...edge(above), ...edge(below).reverse()].join(" ")}" fill="${layer.color}" fill-opacity="0.85"/>`);
    below = above;
  }
  add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left)}" y1="${px(PLOT.top)}" y2="${px(PLOT.top + PLOT.height)}" stroke="#333333"/>`);
  add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(PLOT.top + PLOT.height)}" y2="${px(PLOT.top + PLOT.height)}" stroke="#333333"/>`);
  add(`<text x="${px(PLOT.left + PLOT.width / 2)}" y="${px(PLOT.top + PLOT.height + 44)}" text-anchor="middle">phases of the step (forward, loss, backward, optimizer.step, zero_grad)</text>`);
  add(`<text transform="translate(24 ${px(PLOT.top + PLOT.height / 2)}) rotate(-90)" text-anchor="middle">live tensors (GiB)</text>`);
  if (chart.budget !== undefined) {
    const by = y(chart.budget.bytes);
    add(`<line id="budget" data-bytes="${chart.budget.bytes}" x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(by)}" y2="${px(by)}" stroke="#d55e00" stroke-width="2" stroke-dasharray="8 4"/>`);
    add(`<text x="${px(PLOT.left + 6)}" y="${px(by - 6)}" fill="#d55e00" font-weight="bold">budget ${escape(formatBytes(chart.budget.bytes))}: ${escape(chart.budget.label)}</text>`);
  }
  const top = points[peak];
  if (top !== undefined) {
    const cx = x(peak + 0.5);
    const cy = y(top.bytes);
    const anchor = cx > PLOT.left + PLOT.width * 0.6 ? "end" : "start";
    add(`<circle id="peak" data-phase="${escape(top.phase)}" data-bytes="${top.bytes}" cx="${px(cx)}" cy="${px(cy)}" r="5" fill="#d55e00" stroke="#222222"/>`);
    add(`<text x="${px(cx + (anchor === "end" ? -8 : 8))}" y="${px(Math.max(cy - 8, PLOT.top + 12))}" text-anchor="${anchor}" font-weight="bold">peak ${escape(formatBytes(top.bytes))}: ${escape(top.phase)}</text>`);
  }
  const legendX = PLOT.left + PLOT.width + 20;
  add(`<text x="${legendX}" y="${PLOT.top + 4}" font-weight="bold">at the peak</text>`);
  [...LAYERS].reverse().filter((l) => (top?.byCategory[l.key] ?? 0) > 0).forEach((layer, i) => {
    const ly = PLOT.top + 24 + i * 22;
    add(`<rect x="${legendX}" y="${ly - 10}" width="12" height="12" fill="${layer.color}"/>`);
    add(`<text x="${legendX + 18}" y="${ly}">${escape(layer.label)}: ${escape(formatBytes(top!.byCategory[layer.key]))}</text>`);
  });
  add(`<text x="${PLOT.left}" y="${HEIGHT - 12}" fill="#777777" font-size="11">vramfit plan --timeline: the tensors live in each phase as planned, before the allocator's rounding and cache and the CUDA context</text>`);
  add("</svg>");
  return `${out.join("\n")}\n`;
}

// `plan --svg`: device memory against batch size, stacked by category, with the budget line and the largest batch marked.
import { bytesWithin, reservedBytes, type AllocatorModel } from "../fit/allocator.js";
import { CATEGORIES, bytesByCategory, type Category, type MemoryPlan } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import { categoryLayers } from "./chartStyle.js";

export interface MemoryChart {
  plan: MemoryPlan;
  /** How the job is charged on the target: its allocator, and its CUDA context. */
  allocator: AllocatorModel;
  budgetBytes: number;
  /** What the budget is, e.g. `free on device 0 (NVIDIA H100 80GB HBM3)`. */
  budgetLabel: string;
  /** The largest batch within the budget (0: not even batch 1). */
  maxBatch: number;
  /** A batch to mark too (`plan --batch N`), when the user asked for one. */
  batch?: number;
}

const WIDTH = 900;
const HEIGHT = 540;
const PLOT = { left: 80, top: 78, width: 560, height: 380 };
const GiB = 2 ** 30;

/** Bottom to top: what does not grow with the batch first, then what does. */
const LAYERS: readonly { key: keyof Breakdown; label: string; color: string }[] = [
  { key: "context", label: "CUDA context", color: "#bbbbbb" },
  { key: "allocator", label: "allocator (segments, cache)", color: "#dddddd" },
  ...categoryLayers<Category>(["parameters", "gradients", "optimizerStates", "communication", "workspace", "kvCache", "activations"]),
];

/** Device bytes by category at a batch: each category's live tensors, what the allocator holds beyond them, and the context. */
export type Breakdown = Record<Category | "allocator" | "context", number>;

/**
 * The plan's device bytes at a batch, split: the tensors live at the peak phase by category
 * (unrounded), `allocator` the rest of what the allocator holds at its peak (rounding, segment
 * tails, blocks cached after use), and the job's context. They sum to plannedBytes.
 */
export function deviceBreakdown(plan: MemoryPlan, batch: number, allocator: AllocatorModel): Breakdown {
  const categories = bytesByCategory(plan, batch);
  const live = CATEGORIES.reduce((sum, category) => sum + categories[category], 0);
  return { ...categories, allocator: Math.max(0, reservedBytes(plan, batch, allocator.kind, allocator.conf) - live), context: allocator.contextBytes };
}

type Layers = Breakdown;

function layersAt(chart: MemoryChart, batch: number): Layers {
  return deviceBreakdown(chart.plan, batch, chart.allocator);
}

const total = (layers: Layers): number => LAYERS.reduce((sum, layer) => sum + layers[layer.key], 0);

/** A round step (1, 2 or 5 × 10^k) giving about `ticks` intervals over [0, max]. */
export function niceStep(max: number, ticks = 6): number {
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? 10 * power;
}

const niceMax = (value: number, step: number): number => Math.max(step, Math.ceil(value / step) * step);
const trim = (n: number): string => String(Number(n.toFixed(2)));
const escape = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const px = (n: number): string => n.toFixed(1);
/** A white outline under the glyphs: labels stay legible over the stack. */
const HALO = 'stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"';

/** The chart as a standalone SVG document. */
export function memoryChartSvg(chart: MemoryChart): string {
  const xWanted = Math.max(8, Math.ceil(chart.maxBatch * 1.25), chart.batch ?? 0);
  const xStep = niceStep(xWanted);
  const xMax = niceMax(xWanted, xStep);
  const yWantedGiB = Math.max(total(layersAt(chart, xMax)), chart.budgetBytes * 1.08) / GiB;
  const yStepGiB = niceStep(yWantedGiB);
  const yMax = niceMax(yWantedGiB, yStepGiB) * GiB;
  const x = (batch: number) => PLOT.left + (batch / xMax) * PLOT.width;
  const y = (bytes: number) => PLOT.top + PLOT.height - (Math.min(bytes, yMax) / yMax) * PLOT.height;

  const samples = [...new Set(Array.from({ length: 121 }, (_, i) => Math.round((i * xMax) / 120)))];
  const stacks = samples.map((batch) => layersAt(chart, batch));
  const present = LAYERS.filter((layer) => stacks.some((s) => s[layer.key] > 0));
  const out: string[] = [];
  const add = (line: string) => out.push(line);

  add(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  add(`<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`);
  const [title, ...rest] = chart.plan.description.split("; ");
  add(`<text x="${PLOT.left}" y="28" font-size="16" font-weight="bold">${escape(title ?? "")}</text>`);
  add(`<text x="${PLOT.left}" y="48" fill="#444444">${escape(rest.join("; "))}</text>`);

  // Grid and axes.
  for (let gib = 0; gib * GiB <= yMax + 1; gib += yStepGiB) {
    const ty = y(gib * GiB);
    add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(ty)}" y2="${px(ty)}" stroke="#e5e5e5"/>`);
    add(`<text class="y-tick" x="${px(PLOT.left - 8)}" y="${px(ty)}" dy="4" text-anchor="end">${trim(gib)}</text>`);
  }
  for (let batch = 0; batch <= xMax; batch += xStep) {
    const tx = x(batch);
    add(`<line x1="${px(tx)}" x2="${px(tx)}" y1="${px(PLOT.top + PLOT.height)}" y2="${px(PLOT.top + PLOT.height + 5)}" stroke="#333333"/>`);
    add(`<text class="x-tick" x="${px(tx)}" y="${px(PLOT.top + PLOT.height + 20)}" text-anchor="middle">${batch}</text>`);
  }

  // The stacked categories.
  let below = samples.map(() => 0);
  for (const layer of present) {
    const above = below.map((b, i) => b + stacks[i]![layer.key]);
    const top = samples.map((batch, i) => `${px(x(batch))},${px(y(above[i]!))}`);
    const bottom = samples.map((batch, i) => `${px(x(batch))},${px(y(below[i]!))}`).reverse();
    add(`<polygon class="layer" data-category="${layer.key}" points="${[...top, ...bottom].join(" ")}" fill="${layer.color}" fill-opacity="0.85"/>`);
    below = above;
  }
  add(`<polyline id="total" points="${samples.map((batch, i) => `${px(x(batch))},${px(y(below[i]!))}`).join(" ")}" fill="none" stroke="#222222" stroke-width="1.5"/>`);

  add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left)}" y1="${px(PLOT.top)}" y2="${px(PLOT.top + PLOT.height)}" stroke="#333333"/>`);
  add(`<line x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(PLOT.top + PLOT.height)}" y2="${px(PLOT.top + PLOT.height)}" stroke="#333333"/>`);
  add(`<text x="${px(PLOT.left + PLOT.width / 2)}" y="${px(PLOT.top + PLOT.height + 44)}" text-anchor="middle">batch size</text>`);
  add(`<text transform="translate(24 ${px(PLOT.top + PLOT.height / 2)}) rotate(-90)" text-anchor="middle">device memory (GiB)</text>`);

  // The budget.
  const budgetY = y(chart.budgetBytes);
  add(`<line id="budget" data-bytes="${chart.budgetBytes}" x1="${px(PLOT.left)}" x2="${px(PLOT.left + PLOT.width)}" y1="${px(budgetY)}" y2="${px(budgetY)}" stroke="#d55e00" stroke-width="2" stroke-dasharray="8 4"/>`);
  add(`<text x="${px(PLOT.left + 6)}" y="${px(budgetY - 6)}" fill="#d55e00" font-weight="bold" ${HALO}>budget ${escape(formatBytes(chart.budgetBytes))}: ${escape(chart.budgetLabel)}</text>`);

  // The answer.
  if (chart.maxBatch > 0) {
    // What the answer takes within the budget, as `batch` judges it: at capacity the allocator frees
    // its cache and retries, so this can sit below the curve's unconstrained replay at that batch.
    const bytes = bytesWithin(chart.plan, chart.maxBatch, chart.allocator, chart.budgetBytes);
    const ax = x(chart.maxBatch);
    const ay = y(bytes);
    const anchor = ax > PLOT.left + PLOT.width * 0.6 ? "end" : "start";
    const dx = anchor === "end" ? -8 : 8;
    add(`<line id="answer" data-batch="${chart.maxBatch}" x1="${px(ax)}" x2="${px(ax)}" y1="${px(PLOT.top + PLOT.height)}" y2="${px(ay)}" stroke="#222222" stroke-width="1.5" stroke-dasharray="4 3"/>`);
    add(`<circle cx="${px(ax)}" cy="${px(ay)}" r="5" fill="#d55e00" stroke="#222222"/>`);
    add(`<text x="${px(ax + dx)}" y="${px(Math.max(ay + 28, PLOT.top + 28))}" text-anchor="${anchor}" font-weight="bold" ${HALO}>largest batch ${chart.maxBatch}</text>`);
    add(`<text x="${px(ax + dx)}" y="${px(Math.max(ay + 44, PLOT.top + 44))}" text-anchor="${anchor}" ${HALO}>${escape(formatBytes(bytes))}</text>`);
  } else {
    add(`<text id="answer" data-batch="0" x="${px(PLOT.left + 12)}" y="${px(PLOT.top + 24)}" font-weight="bold" fill="#d55e00">does not fit even batch 1</text>`);
  }
  if (chart.batch !== undefined && chart.batch !== chart.maxBatch) {
    const bx = x(chart.batch);
    const by = y(total(layersAt(chart, chart.batch)));
    add(`<circle id="batch" data-batch="${chart.batch}" cx="${px(bx)}" cy="${px(by)}" r="4" fill="#ffffff" stroke="#222222" stroke-width="1.5"/>`);
    add(`<text x="${px(bx - 8)}" y="${px(by - 8)}" text-anchor="end" ${HALO}>batch ${chart.batch}</text>`);
  }

  // Legend: each category's bytes at the answer (or at batch 1 when nothing fits).
  const at = layersAt(chart, Math.max(1, chart.maxBatch));
  const legendX = PLOT.left + PLOT.width + 24;
  add(`<text x="${legendX}" y="${PLOT.top + 4}" font-weight="bold">at batch ${Math.max(1, chart.maxBatch)}</text>`);
  [...present].reverse().forEach((layer, i) => {
    const ly = PLOT.top + 24 + i * 22;
    add(`<rect x="${legendX}" y="${ly - 10}" width="12" height="12" fill="${layer.color}"/>`);
    add(`<text x="${legendX + 18}" y="${ly}">${escape(layer.label)}: ${escape(formatBytes(at[layer.key]))}</text>`);
  });
  add(`<text x="${PLOT.left}" y="${HEIGHT - 12}" fill="#777777" font-size="11">vramfit plan: the memory model with the ${escape(chart.allocator.kind)} allocator; \`vramfit batch\` verifies the answer with probes on a GPU</text>`);
  add("</svg>");
  return `${out.join("\n")}\n`;
}

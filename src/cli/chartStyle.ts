// How the SVG charts draw each memory category: one label and one colour, so `plan --svg` and
// `plan --timeline --svg` read alike. Colours from Okabe and Ito's palette, told apart by
// colour-blind readers (jfly.uni-koeln.de/color); grey for what no category owns.
import type { Category } from "../plan/memoryPlan.js";

export const CATEGORY_STYLE: Readonly<Record<Category, { label: string; color: string }>> = {
  parameters: { label: "parameters", color: "#0072b2" },
  gradients: { label: "gradients", color: "#56b4e9" },
  optimizerStates: { label: "optimizer states", color: "#009e73" },
  communication: { label: "communication", color: "#d55e00" },
  workspace: { label: "workspace", color: "#999999" },
  kvCache: { label: "KV cache", color: "#cc79a7" },
  activations: { label: "activations", color: "#e69f00" },
};

/** The categories in a chart's stacking order (bottom to top), each with its style. */
export function categoryLayers<K extends Category>(order: readonly K[]): { key: K; label: string; color: string }[] {
  return order.map((key) => ({ key, ...CATEGORY_STYLE[key] }));
}

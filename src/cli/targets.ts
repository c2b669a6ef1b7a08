// Which targets a command evaluates: the CLI's target options handed to the library's one resolver.
import { resolveTargets, type ResolvedTargets } from "../index.js";
import type { DeviceId } from "./parse.js";

/** Catalog GPUs shown when there is no GPU and the user named no target. */
export const FALLBACK_GPU_IDS = ["RTX-4090", "A100-40GB", "A100-80GB", "H100-80GB"] as const;

export interface TargetOptions {
  device?: DeviceId | "all";
  gpu?: string;
  memory?: number;
  analytic?: boolean;
  requireGpu?: boolean;
}

/**
 * Resolves the targets. `fallback` says what to do when no GPU is usable and none was named:
 * "examples" answers for a few common catalog GPUs; "refuse" is for commands that need one.
 */
export function resolveCliTargets(options: TargetOptions, fallback: "examples" | "refuse"): Promise<ResolvedTargets> {
  return resolveTargets({
    ...(options.device !== undefined && { device: options.device }),
    ...(options.gpu !== undefined && { gpu: options.gpu }),
    ...(options.memory !== undefined && { memoryBytes: options.memory }),
    ...(options.analytic !== undefined && { analytic: options.analytic }),
    ...(options.requireGpu !== undefined && { requireGpu: options.requireGpu }),
    ...(fallback === "examples" && { fallback: { gpus: FALLBACK_GPU_IDS } }),
  });
}

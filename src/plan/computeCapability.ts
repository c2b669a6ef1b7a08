// The target GPU's compute capability, as far as the plan needs it: PyTorch picks workspaces and attention kernels by it.
import { invalidArgument } from "../errors.js";

/** `major.minor`, as `torch.cuda.get_device_capability()` and the catalog give it (`9.0`). */
export interface ComputeCapability {
  major: number;
  minor: number;
}

/**
 * Where the target is not known (a raw `--memory` budget, a device read before the plan is made):
 * Hopper, 9.0. It is the common training GPU of today, and its rules are the cautious ones for
 * memory: PyTorch's largest cuBLAS workspace (src/plan/blasWorkspace.ts).
 */
export const DEFAULT_COMPUTE_CAPABILITY = "9.0";

/** Parses `9.0`, `8.6`, `10.0`; anything else is one line naming the option. */
export function parseComputeCapability(option: string, value: string | number): ComputeCapability {
  const text = String(value).trim();
  const match = /^(\d{1,2})\.(\d)$/.exec(text);
  if (match === null || Number(match[1]) < 3) throw invalidArgument(option, value, "a CUDA compute capability major.minor, e.g. 8.0 or 9.0");
  return { major: Number(match[1]), minor: Number(match[2]) };
}

/** The capability a setup plans for: the one given, else DEFAULT_COMPUTE_CAPABILITY. */
export function computeCapabilityOf(setup: { computeCapability?: string }): ComputeCapability {
  return parseComputeCapability("--compute-capability", setup.computeCapability ?? DEFAULT_COMPUTE_CAPABILITY);
}

// Which targets a command evaluates: chosen devices, a catalog GPU, a raw budget, or the fallback.
import { findGpu } from "../devices/catalog.js";
import { VramfitError, invalidArgument } from "../errors.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import { openBackend } from "../native/binding.js";
import type { AnalyticTarget } from "../fit/target.js";
import { uuidKey } from "../devices/nvmlMatch.js";
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

export type Targets =
  | { kind: "device"; addon: Addon; devices: NativeDevice[] }
  | { kind: "analytic"; targets: AnalyticTarget[]; reason: string; fallback: boolean };

function explicitAnalyticTarget(options: TargetOptions): AnalyticTarget | undefined {
  if (options.gpu !== undefined && options.memory !== undefined) {
    throw invalidArgument("--gpu/--memory", `${options.gpu} and ${options.memory} bytes`, "one analytic target, not both");
  }
  if (options.device !== undefined && (options.gpu !== undefined || options.memory !== undefined)) {
    throw invalidArgument("--device", String(options.device), "no --device with --gpu or --memory (those are analytic targets)");
  }
  if (options.gpu !== undefined) return { kind: "gpu", gpu: findGpu(options.gpu) };
  if (options.memory !== undefined) return { kind: "memory", bytes: options.memory };
  return undefined;
}

/** The devices `--device N|all` selects, or a one-line error naming what exists. */
export function selectDevices(all: NativeDevice[], selection: DeviceId | "all" = 0): NativeDevice[] {
  if (selection === "all") return all;
  const device = typeof selection === "number" ? all.find((d) => d.ordinal === selection) : all.find((d) => uuidKey(d.uuid) === uuidKey(selection));
  if (device === undefined) {
    const count = all.length;
    const expected = typeof selection === "number" ? `a CUDA device ordinal from 0 to ${count - 1}` : "the UUID of a visible device (nvidia-smi -L lists them)";
    throw new VramfitError(
      "ERR_INVALID_DEVICE",
      `--device: expected ${expected} (this machine has ${count} visible device${count === 1 ? "" : "s"}), got ${selection}`,
    );
  }
  return [device];
}

/**
 * Resolves the targets. `fallback` says what to do when no GPU is usable and none was named:
 * "examples" answers for a few common catalog GPUs; "refuse" is for commands that need one.
 */
export async function resolveTargets(options: TargetOptions, fallback: "examples" | "refuse"): Promise<Targets> {
  const named = explicitAnalyticTarget(options);
  if (named !== undefined && !options.requireGpu) {
    return { kind: "analytic", targets: [named], reason: `analytic target (${named.kind === "gpu" ? "--gpu" : "--memory"})`, fallback: false };
  }
  const backend = await openBackend();
  if (backend.kind === "none") {
    if (options.requireGpu || (fallback === "refuse" && named === undefined)) {
      const hint = options.requireGpu ? "" : "; name a target with --gpu or --memory to answer analytically";
      throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}${hint}`);
    }
    const targets = FALLBACK_GPU_IDS.map((id): AnalyticTarget => ({ kind: "gpu", gpu: findGpu(id) }));
    return { kind: "analytic", targets, reason: `no usable GPU: ${backend.reason}`, fallback: true };
  }
  if (named !== undefined) {
    return { kind: "analytic", targets: [named], reason: "analytic target", fallback: false };
  }
  const devices = selectDevices(await backend.addon.devices(), options.device);
  if (options.analytic) {
    const targets = devices.map((d): AnalyticTarget => ({ kind: "gpu", gpu: { name: d.name, totalBytes: d.totalBytes } }));
    return { kind: "analytic", targets, reason: "--analytic: the device's total memory, not measured", fallback: false };
  }
  return { kind: "device", addon: backend.addon, devices };
}

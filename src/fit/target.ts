// Where a workload is evaluated: a real device (probes), or analytically on a catalog GPU, a raw budget, or a device's reading.
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import type { NvmlBackend } from "../native/binding.js";
import type { DeviceMemory } from "./budget.js";

/** A GPU as the analytic evaluator needs it (a catalog entry, or any GPU's name and total). */
export interface GpuModel {
  id?: string;
  name: string;
  totalBytes: number;
}

/**
 * An analytic target: a GPU model (its whole memory free), a raw budget (`memoryBytes`: a GPU of
 * that size, nothing else on it), or a real device read without a context (`--analytic`): its
 * free memory from NVML, or its total when NVML cannot say.
 */
export type AnalyticTarget =
  | { kind: "gpu"; gpu: GpuModel }
  | { kind: "memory"; bytes: number }
  | { kind: "reading"; device: NativeDevice; freeBytes: number; memorySource: "nvml" | "cuda" | "total" };

/**
 * A real device, measured by probes: `addon` is the native binding it is reached through, `nvml`
 * (when loaded) says what vramfit's own context holds on it.
 */
export interface DeviceTarget {
  kind: "device";
  device: NativeDevice;
  addon: Addon;
  nvml?: NvmlBackend;
}

/** Any target `findMaxBatch` and `checkFits` can evaluate on (from `resolveTargets`). */
export type Target = DeviceTarget | (AnalyticTarget & { reason?: string });

/** The device a result refers to (the `device` object of the JSON contract). */
export interface DeviceSummary {
  /** CUDA ordinal; null for a catalog GPU or a raw budget. */
  ordinal: number | null;
  name: string;
  /** Catalog id for a catalog GPU. */
  id?: string;
  uuid: string | null;
  totalBytes: number;
  freeBytes: number;
}

/** The memory an analytic target offers, and the device it stands for. */
export function analyticMemory(target: AnalyticTarget): { device: DeviceSummary; memory: DeviceMemory } {
  switch (target.kind) {
    case "memory":
      return {
        device: { ordinal: null, name: "memory budget", uuid: null, totalBytes: target.bytes, freeBytes: target.bytes },
        memory: { freeBytes: target.bytes, totalBytes: target.bytes },
      };
    case "gpu": {
      const { gpu } = target;
      const device = { ordinal: null, name: gpu.name, ...(gpu.id !== undefined && { id: gpu.id }), uuid: null, totalBytes: gpu.totalBytes, freeBytes: gpu.totalBytes };
      return { device, memory: { freeBytes: gpu.totalBytes, totalBytes: gpu.totalBytes } };
    }
    case "reading":
      return {
        device: deviceSummary(target.device, target.freeBytes),
        memory: { freeBytes: target.freeBytes, totalBytes: target.device.totalBytes },
      };
  }
}

export function deviceSummary(device: NativeDevice, freeBytes: number): DeviceSummary {
  return {
    ordinal: device.ordinal,
    name: device.name,
    uuid: device.uuid,
    totalBytes: device.totalBytes,
    freeBytes,
  };
}

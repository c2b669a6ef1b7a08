// Where a workload is evaluated: a real device, a catalog GPU, or a raw memory budget.
import type { NativeDevice } from "../native/addonTypes.js";
import { CATALOG_DEVICE, MEASURED_DEVICE, RAW_BUDGET, type AllocatorModel } from "./allocator.js";

/** A GPU as the analytic evaluator needs it (a catalog entry, or a real device's reported total). */
export interface GpuModel {
  id?: string;
  name: string;
  totalBytes: number;
}

export type AnalyticTarget = { kind: "gpu"; gpu: GpuModel } | { kind: "memory"; bytes: number };

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

/** The memory an analytic target offers and how allocations are charged on it. */
export function analyticMemory(target: AnalyticTarget): { device: DeviceSummary; allocator: AllocatorModel } {
  if (target.kind === "memory") {
    return {
      device: { ordinal: null, name: "memory budget", uuid: null, totalBytes: target.bytes, freeBytes: target.bytes },
      allocator: RAW_BUDGET,
    };
  }
  const { gpu } = target;
  return {
    device: {
      ordinal: null,
      name: gpu.name,
      ...(gpu.id !== undefined && { id: gpu.id }),
      uuid: null,
      totalBytes: gpu.totalBytes,
      freeBytes: gpu.totalBytes,
    },
    allocator: CATALOG_DEVICE,
  };
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

export { MEASURED_DEVICE };

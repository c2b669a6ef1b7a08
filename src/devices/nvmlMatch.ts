// Which NVML device is which CUDA device: by UUID, never by index.
//
// NVML lists every GPU in PCI bus order and ignores CUDA_VISIBLE_DEVICES; CUDA's ordinals follow
// CUDA_DEVICE_ORDER (fastest first by default) and CUDA_VISIBLE_DEVICES (indices, GPU- and MIG-
// UUIDs). The same index can be two different GPUs; the same UUID cannot.
import type { NativeDevice, NvmlDevice, NvmlMemory } from "../native/addonTypes.js";

export type NvmlMatch =
  | { kind: "nvml"; device: NvmlDevice; memory: NvmlMemory; uuid: string }
  | { kind: "cuda"; reason: string; device?: NvmlDevice };

const UUID_PATTERN = /^(?:GPU|MIG)-([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i;

/**
 * The 32 hex digits a UUID is made of, lower-case, whatever its prefix: CUDA reports a MIG
 * instance's UUID with the same 16 bytes NVML prints after `MIG-`. Undefined for anything else,
 * such as the pre-R470 `MIG-GPU-<uuid>/<gi>/<ci>` form, which then matches nothing.
 */
export function uuidKey(uuid: string | null): string | undefined {
  const match = uuid === null ? null : UUID_PATTERN.exec(uuid);
  return match ? match.slice(1).join("").toLowerCase() : undefined;
}

/**
 * A whole UUID, or `GPU-`/`MIG-` and its first hex digits: CUDA_VISIBLE_DEVICES takes a prefix
 * that names one device, and so does --device (which device it names is decided against the
 * visible ones, by selectDevices).
 */
export function isUuidOrPrefix(text: string): boolean {
  return uuidKey(text) !== undefined || (text.length < 40 && /^(GPU|MIG)-[0-9a-f]+(-[0-9a-f]+){0,4}-?$/i.test(text));
}

/** The NVML device that is `cuda`, with a memory reading, or why CUDA must answer instead. */
export function matchNvml(cuda: NativeDevice, nvmlDevices: readonly NvmlDevice[]): NvmlMatch {
  const key = uuidKey(cuda.uuid);
  const device = key === undefined ? undefined : nvmlDevices.find((d) => uuidKey(d.uuid) === key);
  if (device === undefined) return { kind: "cuda", reason: `NVML lists no device with UUID ${cuda.uuid}` };
  if (device.migIndex === null && device.migEnabled !== false) {
    // The CUDA device is then one MIG instance of this GPU, named by the GPU's UUID because the
    // driver lacks cuDeviceGetUuid_v2: the GPU's memory is not the instance's.
    const why =
      device.migEnabled === true
        ? `MIG is enabled on ${device.uuid ?? cuda.uuid} and the CUDA driver does not say which instance this is (no cuDeviceGetUuid_v2)`
        : `NVML cannot say whether MIG is enabled on ${device.uuid ?? cuda.uuid}: ${firstError(device, "nvmlDeviceGetM")}`;
    return { kind: "cuda", reason: why, device };
  }
  if (device.memory === null) {
    return { kind: "cuda", reason: firstError(device, "nvmlDeviceGetMemoryInfo") ?? "NVML has no memory reading", device };
  }
  return { kind: "nvml", device, memory: device.memory, uuid: device.uuid ?? cuda.uuid };
}

function firstError(device: NvmlDevice, callPrefix: string): string | undefined {
  return (device.errors.find((e) => e.call?.startsWith(callPrefix)) ?? device.errors[0])?.message;
}

/** What NVML's reading means in CUDA's terms: total without the reserved bytes, and free. */
export function usableMemory(memory: NvmlMemory): { totalBytes: number; freeBytes: number } {
  return { totalBytes: memory.totalBytes - (memory.reservedBytes ?? 0), freeBytes: memory.freeBytes };
}

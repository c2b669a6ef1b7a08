// The native addon's exports as one TypeScript type: the contract between native/ and src/.
import type { VramfitError } from "../errors.js";

/** What `loadDriver` found. */
export interface DriverInfo {
  /** `cuDriverGetVersion`: 1000 × major + 10 × minor, e.g. 12040 for CUDA 12.4. */
  version: number;
  /** The path handed to `dlopen`. */
  libraryPath: string;
  /** Whether `cuDeviceGetUuid_v2` was found (else the unversioned `cuDeviceGetUuid` serves). */
  uuidV2: boolean;
}

/**
 * A device's compute mode (`CU_DEVICE_ATTRIBUTE_COMPUTE_MODE`, `nvmlDeviceGetComputeMode`: the same
 * values). `exclusive-process`: one process at a time may have a context on the device;
 * `prohibited`: none may; `exclusive-thread` was removed in CUDA 8 and is not expected.
 */
export type NativeComputeMode = "default" | "exclusive-process" | "prohibited" | "exclusive-thread";

/** One CUDA device, as the driver enumerates it (under `CUDA_VISIBLE_DEVICES`). Creates no context. */
export interface NativeDevice {
  ordinal: number;
  /** `cuDeviceGetName`. */
  name: string;
  /**
   * `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, from `cuDeviceGetUuid_v2` (16 bytes, hex, 8-4-4-4-12);
   * `MIG-…` for a MIG instance (the driver names it "<GPU> MIG <profile>"), as nvidia-smi and
   * CUDA_VISIBLE_DEVICES do. With only the older `cuDeviceGetUuid`, a MIG instance has its GPU's UUID.
   */
  uuid: string;
  /** `cuDeviceGetPCIBusId`, e.g. `0000:3B:00.0`. */
  pciBusId: string;
  /** `cuDeviceTotalMem_v2`. */
  totalBytes: number;
  /** `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR`. */
  computeCapability: { major: number; minor: number };
  /** `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`. */
  multiprocessorCount: number;
  /** `CU_DEVICE_ATTRIBUTE_INTEGRATED`: device memory is system memory (Jetson). */
  integrated: boolean;
  /**
   * `CU_DEVICE_ATTRIBUTE_COMPUTE_MODE`; null for a value cuda.h does not define. When the mode
   * forbids vramfit's context, device calls reject `ERR_DEVICE_EXCLUSIVE_PROCESS` (another process
   * holds the device) or `ERR_DEVICE_PROHIBITED`, naming the mode.
   */
  computeMode: NativeComputeMode | null;
}

/** `cuMemGetInfo_v2` in the device's primary context: exactly what `cudaMemGetInfo` returns. */
export interface NativeMemInfo {
  freeBytes: number;
  totalBytes: number;
}

export interface NativeProbeOptions {
  /** Write every byte (`cuMemsetD8_v2`) and synchronize, so the memory is really backed. */
  touch: boolean;
  /**
   * Raise `cancel[0]` (set it to 1) to stop the probe in flight: it frees what it allocated and
   * rejects `ERR_ABORTED`. Checked before each allocation and each block touched; best over a
   * SharedArrayBuffer, since the device thread reads it while JS writes it.
   */
  cancel?: Int32Array;
  /**
   * Free memory the probe must leave on the device (default 0: no check). The addon reads
   * `cuMemGetInfo_v2` before the first allocation and after each one: it refuses an allocation
   * whose size would take the free memory last read below the reserve, and gives back at once an
   * allocation after which free memory is found below it (the driver's rounding, or another
   * process allocating between the reading and the allocation). Either way the probe stops there:
   * `fits: false`, `limit: "reserve"`, `failedIndex` that allocation.
   */
  reserveBytes?: number;
  /**
   * Most bytes the probe may allocate, its requested sizes summed (`--max-mem` less what the job
   * spends elsewhere); unset: no cap. The allocation that would exceed it is not attempted:
   * `fits: false`, `limit: "max-mem"`. Driver rounding is not counted (the allocator emulation
   * hands over whole segments).
   */
  limitBytes?: number;
  /**
   * Allocations given back during the probe, as flattened (before, which) pairs in order: before
   * `sizes[before]` is allocated, the block of `sizes[which]` (which < before) is freed with
   * `cuMemFree_v2` — a step's replay giving cached segments back before it retries, as PyTorch's
   * allocator does on out-of-memory. The reserve and the cap count what is held at each moment.
   */
  releases?: number[];
  /**
   * Per allocation, the page size to map it with through the driver's virtual-memory API, as
   * PyTorch's expandable segments hold memory (ExpandableSegment::map): a range reserved
   * (`cuMemAddressReserve`), one `cuMemCreate` per page (rounded up to
   * `cuMemGetAllocationGranularity`), each mapped (`cuMemMap`), the range made accessible
   * (`cuMemSetAccess`); given back page by page (`cuMemUnmap`, `cuMemRelease`) and the range freed
   * (`cuMemAddressFree`). 0: `cuMemAlloc_v2`. Where the driver lacks the API, every allocation is a
   * `cuMemAlloc_v2` (`virtualMemory` false in the result). One entry per size, or none.
   */
  pageBytes?: number[] | Float64Array;
}

/**
 * Why a probe did not fit: the driver ran out of memory (`CUDA_ERROR_OUT_OF_MEMORY`), the
 * allocation would have taken free memory below `reserveBytes`, or it would have exceeded
 * `limitBytes`. Checked in the order max-mem, reserve, out-of-memory.
 */
export type NativeProbeLimit = "out-of-memory" | "reserve" | "max-mem";

/** The outcome of one allocation probe. Out-of-memory is a result, not an error. */
export interface NativeProbeResult {
  /** Every size was allocated (within the reserve and the cap). */
  fits: boolean;
  /** Index into `sizes` of the allocation that was refused or ran out of memory; -1 when `fits`. */
  failedIndex: number;
  /** Number of allocations that succeeded and were kept until the peak (then freed). */
  allocated: number;
  /**
   * `cuMemGetInfo_v2` free bytes with every kept allocation still held (the peak): read after the
   * last allocation (after touching, with `touch`).
   */
  freeBytesAtPeak: number;
  /** Why it does not fit; null when `fits`. */
  limit: NativeProbeLimit | null;
  /** The requested bytes of the kept allocations, summed (what `limitBytes` is held against). */
  allocatedBytes: number;
  /** `cuMemGetInfo_v2` free bytes before the first allocation (vramfit's context already counted). */
  freeBytesAtStart: number;
  /**
   * The lowest `cuMemGetInfo_v2` free bytes the probe read. With a reserve, free memory is read
   * after every allocation, so this includes the reading after an allocation that was then given
   * back; without one, only the start and the peak are read.
   */
  minFreeBytes: number;
  /**
   * When it does not fit: what the device could still give at that moment, besides the
   * `allocatedBytes` held — the largest whole number of 2 MiB under the refused size that
   * `cuMemAlloc_v2` granted then (each trial freed at once), within the reserve and the cap. So
   * `allocatedBytes + headroomBytes` is the room the device really gave the step. 0 when `fits`.
   */
  headroomBytes: number;
  /** Pages were mapped through the driver's virtual-memory API (`pageBytes` given, and the driver has it). */
  virtualMemory: boolean;
}

/** What `loadNvml` found: which of NVML's versioned functions this library has. */
export interface NvmlInfo {
  libraryPath: string;
  /** `nvmlSystemGetDriverVersion`, e.g. `550.54.15`; null when NVML could not say. */
  driverVersion: string | null;
  /** `nvmlDeviceGetMemoryInfo_v2` exists (else the v1 call serves: no reserved bytes). */
  memoryInfoV2: boolean;
  /** The process query bound (`..._v3`, `..._v2`, or the unversioned v1); null when none. */
  processQuery: string | null;
  /** The MIG functions exist. */
  mig: boolean;
}

/** One NVML memory reading, as the library returned it (v2 totals include the reserved bytes). */
export interface NvmlMemory {
  call: "nvmlDeviceGetMemoryInfo_v2" | "nvmlDeviceGetMemoryInfo";
  totalBytes: number;
  /** v2 only: what the driver and firmware reserve; null from the v1 call. */
  reservedBytes: number | null;
  freeBytes: number;
  usedBytes: number;
}

/** A process with a compute context on a device. */
export interface NvmlProcess {
  pid: number;
  /** null when NVML cannot tell (NVML_VALUE_NOT_AVAILABLE, e.g. another container's process). */
  usedBytes: number | null;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
}

/** A GPU, or one MIG instance of a GPU, as NVML lists it (every GPU: NVML ignores CUDA_VISIBLE_DEVICES). */
export interface NvmlDevice {
  /** NVML index of the GPU (of the parent GPU for a MIG instance): not a CUDA ordinal. */
  index: number;
  /** The MIG slot for an instance; null for a GPU. */
  migIndex: number | null;
  /** `GPU-…` or `MIG-…`; null when it could not be read. */
  uuid: string | null;
  /** The GPU's UUID, for a MIG instance. */
  parentUuid: string | null;
  /** For a GPU: whether MIG is on; null when unknown (or for an instance). */
  migEnabled: boolean | null;
  /**
   * For a GPU: `nvmlDeviceGetComputeMode`, readable before any context exists (with `processes`,
   * it tells whether an exclusive-process GPU is taken); null for an instance, when unsupported
   * (an integrated GPU), when this NVML lacks the call, or when it failed (see `errors`).
   */
  computeMode: NativeComputeMode | null;
  /** null when the query failed or is not supported (an integrated GPU): see `errors`. */
  memory: NvmlMemory | null;
  /** null when unknown: unsupported, failed (see `errors`), or no process query in this NVML. */
  processes: NvmlProcess[] | null;
  /** Every NVML call that failed for this device, as `ERR_NVML_<NAME>` errors. */
  errors: VramfitError[];
}

/** The byte layout of an NVML struct as compiled into the addon. */
export interface NvmlStructLayout {
  size: number;
  offsets: Record<string, number>;
}

/**
 * The addon. Every device call is asynchronous (an `AsyncWorker` off the JS thread) and rejects
 * with the `VramfitError` class given to `setErrorClass`, carrying a stable `code` and, for driver
 * failures, `cudaCode` and `call`.
 */
export interface Addon {
  /** Hands the JS error class to C++ once, before any other call (better-sqlite3's pattern). */
  setErrorClass(errorClass: typeof VramfitError): void;
  /**
   * `dlopen(path)`, binds the `_v2` symbols, `cuInit(0)`, `cuDriverGetVersion`. Once per process;
   * a second call with the same path resolves to the same info, with another path rejects.
   */
  loadDriver(path: string): Promise<DriverInfo>;
  /** Every visible device. Rejects `ERR_NO_DEVICE` when there is none. */
  devices(): Promise<NativeDevice[]>;
  /**
   * Retains the primary context (once per device, until `releaseDevice(s)`) and reads free/total.
   * Device calls run on one thread per device, so devices proceed concurrently and in order each.
   */
  memGetInfo(ordinal: number): Promise<NativeMemInfo>;
  /**
   * Allocates each size in order with `cuMemAlloc_v2` (a size of 0 is skipped), within
   * `reserveBytes` and `limitBytes`, optionally touches them, reads free memory at the peak, frees
   * everything (also on every error and on cancel). Probes on one device are serialized.
   */
  probe(ordinal: number, sizes: readonly number[] | Float64Array, options: NativeProbeOptions): Promise<NativeProbeResult>;
  /**
   * `memGetInfo` on several devices (distinct ordinals) at once, in one call: each device's
   * reading, or its own error (the others still answer). Absent from an addon built before it.
   */
  memGetInfoEach?(ordinals: readonly number[]): Promise<(NativeMemInfo | Error)[]>;
  /**
   * `probe` of the same sizes on several devices (distinct ordinals) at once, in one call: each
   * device's result, or its own error. Absent from an addon built before it.
   */
  probeEach?(ordinals: readonly number[], sizes: readonly number[] | Float64Array, options: NativeProbeOptions): Promise<(NativeProbeResult | Error)[]>;
  /**
   * Releases vramfit's retain of the device's primary context (`cuDevicePrimaryCtxRelease_v2`,
   * balancing the one `cuDevicePrimaryCtxRetain` that `memGetInfo`/`probe` made): the driver
   * destroys the context, and frees the memory it took, once nothing else in the process (PyTorch,
   * onnxruntime) holds it. Runs on the device's thread after every call already queued there
   * (a probe in flight finishes and frees first). The next device call retains it again. Resolves
   * true when a context was released, false when vramfit held none. Rejects `ERR_INVALID_DEVICE`,
   * `ERR_DRIVER_NOT_LOADED`, or `ERR_CUDA_<NAME>` (call `cuDevicePrimaryCtxRelease_v2`) when the
   * release fails; the context then counts as still held, so a later call tries again.
   */
  releaseDevice(ordinal: number): Promise<boolean>;
  /**
   * `releaseDevice` on every device vramfit has used, concurrently; resolves with the ordinals
   * whose context was released (ascending), `[]` when none (also before `loadDriver`: callable
   * unconditionally, e.g. from `Symbol.asyncDispose`). Contexts are the process's, so this
   * releases what every Node environment (worker threads too) had retained. Rejects with the
   * first failure, after every device has been tried.
   */
  releaseDevices(): Promise<number[]>;
  /**
   * `dlopen(path)`, binds NVML's functions, `nvmlInit_v2`. Once per process, like loadDriver.
   * Rejects `ERR_NVML_NOT_FOUND`, `ERR_NVML_SYMBOL`, or `ERR_NVML_<NAME>` from nvmlInit_v2.
   */
  loadNvml(path: string): Promise<NvmlInfo>;
  /** Every GPU and MIG instance NVML sees, with memory and processes. Creates no CUDA context. */
  nvmlDevices(): Promise<NvmlDevice[]>;
  /** The NVML struct layouts and the `nvmlMemory_v2` version word this addon was built with. */
  nvmlAbi(): Record<"nvmlMemory_t" | "nvmlMemory_v2_t" | "nvmlProcessInfo_v1_t" | "nvmlProcessInfo_v2_t", NvmlStructLayout> & {
    nvmlMemory_v2: number;
  };
  /** `flock(fd, LOCK_EX | LOCK_NB)`: true when locked, false when another open file holds it. Throws `ERR_LOCK`. */
  tryLockFile(fd: number): boolean;
  /**
   * src/fit/cachingAllocator.ts's replay at a capacity, natively (native/addon/replay_step.cc):
   * synchronous, pure, no driver. `io` holds the configuration (capacity, max_split_size,
   * max_non_split_rounding, segments as 1 or 0, large_segment_size, the count n of
   * roundup_power2_divisions, then the n divisions) and is overwritten with the figures (fits as
   * 1 or 0, reserved peak, allocated peak, cudaMallocs, cudaFrees, retries, failedAt:
   * replay_step.cc's Figure); returns the segment log when segments is 1. Absent from an addon
   * built before it (which may have `replayStepInto` or `replayStep`, older forms: vramfit no
   * longer uses them).
   */
  replayInto?(order: Int32Array, bytes: Float64Array, io: Float64Array): Float64Array | undefined;
  /** src/fit/expandableSegments.ts's replay, natively, as replayInto (cudaMallocs: maps, cudaFrees: unmaps; the log: its map log). */
  replayExpandableInto?(order: Int32Array, bytes: Float64Array, io: Float64Array): Float64Array | undefined;
}

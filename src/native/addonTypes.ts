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

/** One CUDA device, as the driver enumerates it (under `CUDA_VISIBLE_DEVICES`). Creates no context. */
export interface NativeDevice {
  ordinal: number;
  /** `cuDeviceGetName`. */
  name: string;
  /** `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, from `cuDeviceGetUuid_v2` (16 bytes, hex, 8-4-4-4-12). */
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
}

/** `cuMemGetInfo_v2` in the device's primary context: exactly what `cudaMemGetInfo` returns. */
export interface NativeMemInfo {
  freeBytes: number;
  totalBytes: number;
}

export interface NativeProbeOptions {
  /** Write every byte (`cuMemsetD8_v2`) and synchronize, so the memory is really backed. */
  touch: boolean;
}

/** The outcome of one allocation probe. Out-of-memory is a result, not an error. */
export interface NativeProbeResult {
  /** Every size was allocated. */
  fits: boolean;
  /** Index into `sizes` of the allocation that ran out of memory; -1 when `fits`. */
  failedIndex: number;
  /** Number of allocations that succeeded (and were then freed). */
  allocated: number;
  /** `cuMemGetInfo_v2` free bytes with every successful allocation still held (the peak). */
  freeBytesAtPeak: number;
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
  /** Retains the primary context (once per device, for the process's life) and reads free/total. */
  memGetInfo(ordinal: number): Promise<NativeMemInfo>;
  /**
   * Allocates each size in order with `cuMemAlloc_v2` (a size of 0 is skipped), optionally touches
   * them, reads free memory at the peak, frees everything. Probes on one device are serialized.
   */
  probe(ordinal: number, sizes: readonly number[], options: NativeProbeOptions): Promise<NativeProbeResult>;
}

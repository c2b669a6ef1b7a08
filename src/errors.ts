// The one error class of vramfit: stable string codes shared by the native addon and TypeScript.

/**
 * Stable error codes. Scripts may match on them; never rename one.
 * CUDA driver errors surface as `ERR_CUDA_<NAME>` (for example `ERR_CUDA_LAUNCH_FAILED` for
 * `CUDA_ERROR_LAUNCH_FAILED`), with `cudaCode` and `call` set.
 */
export type VramfitErrorCode =
  | "ERR_INVALID_ARGUMENT" // bad input from the command line, a file or a library call
  | "ERR_DRIVER_NOT_FOUND" // libcuda.so.1 (or VRAMFIT_CUDA_LIBRARY) could not be loaded
  | "ERR_DRIVER_SYMBOL" // the driver lacks a function vramfit needs (driver too old)
  | "ERR_DRIVER_NOT_LOADED" // a device call before loadDriver()
  | "ERR_ADDON_NOT_FOUND" // the native addon could not be loaded
  | "ERR_NO_DEVICE" // the driver sees no CUDA device
  | "ERR_INVALID_DEVICE" // a device ordinal the driver does not have
  | "ERR_GPU_REQUIRED" // --require-gpu, and no device is usable
  | "ERR_UNKNOWN_GPU" // --gpu names no catalog entry
  | `ERR_CUDA_${string}`;

export interface VramfitErrorOptions {
  /** The CUDA driver's numeric result (CUresult), when a driver call failed. */
  cudaCode?: number;
  /** The driver function that failed, e.g. `cuMemAlloc_v2`. */
  call?: string;
}

export class VramfitError extends Error {
  readonly code: VramfitErrorCode;
  readonly cudaCode?: number;
  readonly call?: string;

  constructor(code: VramfitErrorCode, message: string, options: VramfitErrorOptions = {}) {
    super(message);
    this.name = "VramfitError";
    this.code = code;
    if (options.cudaCode !== undefined) this.cudaCode = options.cudaCode;
    if (options.call !== undefined) this.call = options.call;
  }
}

/** Exit status of the CLI (DESIGN.md, Conventions). */
export const ExitStatus = {
  ok: 0,
  doesNotFit: 1,
  usage: 2,
  gpuRequired: 3,
  /** An unexpected failure: a driver error that is neither bad input nor a missing GPU. */
  failure: 4,
} as const;

/** Maps an error to the CLI's exit status: the one place that decides it. */
export function exitStatusOf(error: unknown): number {
  if (!(error instanceof VramfitError)) return ExitStatus.failure;
  switch (error.code) {
    case "ERR_INVALID_ARGUMENT":
    case "ERR_INVALID_DEVICE":
    case "ERR_UNKNOWN_GPU":
      return ExitStatus.usage;
    case "ERR_GPU_REQUIRED":
      return ExitStatus.gpuRequired;
    default:
      return ExitStatus.failure;
  }
}

/**
 * Builds the one-line message for bad input: which option, which value, what was expected
 * (the sharp-style "Expected X for Y but received Z").
 */
export function invalidArgument(option: string, value: unknown, expected: string): VramfitError {
  const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
  return new VramfitError("ERR_INVALID_ARGUMENT", `${option}: expected ${expected}, got ${shown}`);
}

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
  | "ERR_NVML_NOT_FOUND" // libnvidia-ml.so.1 (or VRAMFIT_NVML_LIBRARY) could not be loaded (vramfit uses CUDA)
  | "ERR_NVML_SYMBOL" // NVML lacks a function vramfit needs (vramfit uses CUDA)
  | "ERR_NVML_NOT_LOADED" // an NVML call before loadNvml()
  | "ERR_DEVICE_BUSY" // another vramfit process kept the device locked past --lock-timeout
  | "ERR_LOCK" // the device lock file could not be locked (an I/O error, not contention), or the private lock directory is not the user's alone
  | "ERR_ABORTED" // a probe was cancelled (its allocations are freed)
  | "ERR_DEVICE_EXCLUSIVE_PROCESS" // the GPU is in exclusive-process compute mode and another process holds it
  | "ERR_DEVICE_PROHIBITED" // the GPU is in prohibited compute mode: no process may use it
  | "ERR_INTERRUPTED" // SIGINT or SIGTERM stopped the CLI (after every probe freed its memory)
  | "ERR_JOB_FAILED" // a job run by --exec failed other than out of GPU memory (crash, signal, host OOM killer)
  | "ERR_JOB_TIMEOUT" // a job run by --exec ran past --run-timeout (its process group was killed)
  | "ERR_JOB_UNMEASURED" // --exec could not bound the search: no peak measured or none growing with the batch, and no --max-batch
  | "ERR_SIMULATION_UNSUPPORTED" // --exec on a simulated GPU: the job's torch is no CUDA build, or imports functions the stub libraries lack
  | `ERR_NVML_${string}`
  | `ERR_CUDA_${string}`;

export interface VramfitErrorOptions {
  /** The CUDA driver's numeric result (CUresult), when a driver call failed. */
  cudaCode?: number;
  /** The driver or NVML function that failed, e.g. `cuMemAlloc_v2`. */
  call?: string;
  /** NVML's numeric result (nvmlReturn_t), when an NVML call failed. */
  nvmlCode?: number;
  /** The signal that interrupted the CLI (`ERR_INTERRUPTED`). */
  signal?: "SIGINT" | "SIGTERM";
}

export class VramfitError extends Error {
  readonly code: VramfitErrorCode;
  readonly cudaCode?: number;
  readonly call?: string;
  readonly nvmlCode?: number;
  readonly signal?: "SIGINT" | "SIGTERM";

  constructor(code: VramfitErrorCode, message: string, options: VramfitErrorOptions = {}) {
    super(message);
    this.name = "VramfitError";
    this.code = code;
    if (options.cudaCode !== undefined) this.cudaCode = options.cudaCode;
    if (options.call !== undefined) this.call = options.call;
    if (options.nvmlCode !== undefined) this.nvmlCode = options.nvmlCode;
    if (options.signal !== undefined) this.signal = options.signal;
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
  /** Another vramfit process kept the device locked past --lock-timeout: try again later. */
  deviceBusy: 5,
  /**
   * A partial result: every healthy device answered (and fits), but at least one device failed
   * (its row carries the error). Distinct from 1: "does not fit" is certain, this is not.
   */
  partial: 6,
  /** 128 + the signal's number, as shells report a process killed by it. */
  interruptedBySigint: 130,
  interruptedBySigterm: 143,
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
    case "ERR_SIMULATION_UNSUPPORTED":
      return ExitStatus.gpuRequired;
    case "ERR_DEVICE_BUSY":
      return ExitStatus.deviceBusy;
    case "ERR_INTERRUPTED":
      return error.signal === "SIGTERM" ? ExitStatus.interruptedBySigterm : ExitStatus.interruptedBySigint;
    default:
      return ExitStatus.failure;
  }
}

/** The most characters of an offending value an error message echoes. */
export const EXCERPT_CHARS = 80;

/**
 * At most `max` characters of `text`, on one line: a long value is cut, saying how long it was
 * (a 50 MB field must not become a 50 MB error message).
 */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const line = text.replace(/[\r\n]+/g, " ");
  if (line.length <= max) return line;
  return `${line.slice(0, max - 1)}… (${text.length} characters)`;
}

/** An option or field name, kept whole unless absurdly long: then its start and its end (the field). */
function label(option: string): string {
  const max = 3 * EXCERPT_CHARS;
  if (option.length <= max) return option.replace(/[\r\n]+/g, " ");
  return `${excerpt(option.slice(0, EXCERPT_CHARS), EXCERPT_CHARS)}…${excerpt(option.slice(-EXCERPT_CHARS), EXCERPT_CHARS)}`;
}

/**
 * Builds the one-line message for bad input: which option, which value, what was expected
 * (the sharp-style "Expected X for Y but received Z"). The value is shown as a short excerpt.
 */
export function invalidArgument(option: string, value: unknown, expected: string): VramfitError {
  let shown: string;
  if (typeof value !== "string") shown = excerpt(String(value));
  else if (value.length <= EXCERPT_CHARS) shown = JSON.stringify(value);
  else shown = `${JSON.stringify(value.slice(0, EXCERPT_CHARS - 1)).slice(0, -1)}…" (${value.length} characters)`;
  return new VramfitError("ERR_INVALID_ARGUMENT", `${label(String(option))}: expected ${expected}, got ${shown}`);
}

// `vramfit batch`'s options, shared by its two answers: the largest batch and (`--solve seq`) the longest sequence.
import type { JobOptions } from "./jobOptions.js";
import type { TargetOptions } from "./targets.js";
import type { WorkloadOptions } from "./workloadOptions.js";

export interface BatchOptions extends WorkloadOptions, TargetOptions, JobOptions {
  maxBatch?: number;
  touch: boolean;
  /** false with `--no-advice`: a short answer gets no advice (scripts that want the verdict only). */
  advice?: boolean;
  json?: boolean;
  minBatch?: number;
  hostMemory?: number;
  lockTimeout?: number;
  exec?: string;
  calibrate?: [number, number];
  runTimeout?: number;
  logDir?: string;
  /** `--solve seq`: the longest sequence at `batch` instead of the largest batch. */
  solve?: "batch" | "seq";
  /** With --solve seq, the batch the sequence must fit at. */
  batch?: number;
}

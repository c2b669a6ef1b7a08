// How a workload is run: training or inference, precision, optimizer, parallelism.
import type { Optimizer, Precision } from "./bytesPerParameter.js";

export type Mode = "train" | "infer";

export interface RunSetup {
  mode: Mode;
  precision: Precision;
  optimizer: Optimizer;
}

/** The common case, printed by the CLI so the user sees what was assumed. */
export const DEFAULT_SETUP: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };

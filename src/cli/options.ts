// The one table of CLI options: commander definitions, value types and the README's reference.
import { OPTIMIZERS, PRECISIONS } from "../plan/bytesPerParameter.js";
import { parseChoice, parseCount, parseDeviceSelection, parseSize } from "./parse.js";

export type CommandName = "info" | "batch" | "check" | "gpus";

export interface OptionSpec {
  /** commander flags, e.g. `--memory <size>`. */
  flags: string;
  description: string;
  /** The commands that take it. */
  commands: readonly CommandName[];
  /** Turns the raw text into the typed value; throws one clear line on bad input. */
  parse?: (text: string) => unknown;
  /** Shown in help and the README; applied by the command, not by commander. */
  defaultText?: string;
}

const WORKLOAD: readonly CommandName[] = ["batch", "check"];
const TARGET: readonly CommandName[] = ["batch", "check"];

export const OPTIONS: readonly OptionSpec[] = [
  // Workload
  { flags: "--params <n>", description: "raw workload: parameter count (e.g. 7e9)", commands: WORKLOAD, parse: (t) => parseCount("--params", t) },
  { flags: "--per-sample <size>", description: "raw workload: activation bytes per sample (e.g. 1GiB)", commands: WORKLOAD, parse: (t) => parseSize("--per-sample", t) },
  { flags: "--fixed <size>", description: "raw workload: other fixed bytes", commands: WORKLOAD, parse: (t) => parseSize("--fixed", t), defaultText: "0" },
  { flags: "--precision <p>", description: `weights and activations: ${PRECISIONS.join("|")}`, commands: WORKLOAD, parse: (t) => parseChoice("--precision", t, PRECISIONS), defaultText: "amp" },
  { flags: "--optimizer <o>", description: `optimizer: ${OPTIMIZERS.join("|")}`, commands: WORKLOAD, parse: (t) => parseChoice("--optimizer", t, OPTIMIZERS), defaultText: "adamw" },
  { flags: "--mode <m>", description: "train|infer", commands: WORKLOAD, parse: (t) => parseChoice("--mode", t, ["train", "infer"] as const), defaultText: "train" },
  // check
  { flags: "--batch <n>", description: "the batch size to check", commands: ["check"], parse: (t) => parseCount("--batch", t) },
  { flags: "--need <size>", description: "a raw requirement instead of a workload (e.g. 40GiB)", commands: ["check"], parse: (t) => parseSize("--need", t) },
  // Target
  { flags: "--device <n|all>", description: "CUDA device ordinal(s) to measure", commands: TARGET, parse: parseDeviceSelection, defaultText: "0" },
  { flags: "--gpu <id>", description: "a catalog GPU (analytic), e.g. H100-80GB; see `vramfit gpus`", commands: TARGET },
  { flags: "--memory <size>", description: "a raw memory budget (analytic), e.g. 24GiB", commands: TARGET, parse: (t) => parseSize("--memory", t) },
  { flags: "--analytic", description: "do not touch the device: use the analytic model", commands: TARGET },
  { flags: "--max-mem <size>", description: "the most this job may use", commands: TARGET, parse: (t) => parseSize("--max-mem", t) },
  { flags: "--reserve <size>", description: "headroom to leave free", commands: TARGET, parse: (t) => parseSize("--reserve", t), defaultText: "0" },
  { flags: "--max-batch <n>", description: "the largest batch to consider", commands: ["batch"], parse: (t) => parseCount("--max-batch", t) },
  { flags: "--no-touch", description: "allocate without writing the memory (faster, less certain)", commands: TARGET },
  { flags: "--require-gpu", description: "exit 3 unless a GPU is usable (never fall back)", commands: ["info", "batch", "check"] },
  // Output
  { flags: "--json", description: "JSON on stdout, for scripts", commands: ["info", "batch", "check", "gpus"] },
];

export function optionsFor(command: CommandName): OptionSpec[] {
  return OPTIONS.filter((option) => option.commands.includes(command));
}

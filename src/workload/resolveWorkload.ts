// Turns the workload options (--model, --hf-config, --spec, --params/--per-sample/--fixed) into one Workload.
import { readFileSync } from "node:fs";
import { parseSuffixedCount } from "../count.js";
import { invalidArgument } from "../errors.js";
import { didYouMean } from "../suggest.js";
import { parseBytes } from "../units.js";
import { validateWorkloadInput } from "./validateWorkload.js";
import { readHfConfig } from "./hfConfig.js";
import { LIMITS } from "./limits.js";
import { presetNames, presetWorkload } from "./presets.js";
import { readSpec } from "./spec.js";
import type { Workload } from "./workload.js";

/** A file the CLI has read and parsed: its path (for messages) and its JSON. */
export interface ParsedFile {
  path: string;
  json: unknown;
}

/** The workload options as the CLI hands them over; counts and sizes may come as text or as numbers already parsed. */
export interface WorkloadInput {
  model?: string;
  /** A config.json's path (read here), or the file already read. */
  hfConfig?: string | ParsedFile;
  /** A spec's path (read here), or the file already read. */
  spec?: string | ParsedFile;
  params?: string | number;
  perSample?: string | number;
  fixed?: string | number;
}

const EXPECTED_SOURCE = "exactly one of --model NAME, --hf-config FILE, --spec FILE, or --params N --per-sample SIZE [--fixed SIZE]";

function sizeOption(option: string, value: string | number): number {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) throw invalidArgument(option, value, "a whole number of bytes ≥ 0");
    return value;
  }
  return parseBytes(value, option);
}

/** A path read and parsed (a UTF-8 byte-order mark allowed), or the file as given. */
function parsedFile(field: string, file: string | ParsedFile): ParsedFile {
  if (typeof file !== "string") return file;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw invalidArgument(field, file, `a readable JSON file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  try {
    return { path: file, json: JSON.parse(text.replace(/^\uFEFF/, "")) as unknown };
  } catch (error) {
    throw invalidArgument(field, file, `a JSON file (${(error as Error).message})`);
  }
}

/** The preset, or a one-line error with the nearest name. */
export function presetByName(name: string): Workload {
  const workload = presetWorkload(name) ?? presetWorkload(name.trim().toLowerCase());
  if (workload) return workload;
  const error = invalidArgument("--model", name, "a preset (vramfit models lists them)");
  error.message += didYouMean(presetNames(), name);
  throw error;
}

/**
 * Resolves exactly one workload source. Throws `ERR_INVALID_ARGUMENT` for none or several
 * sources, `--per-sample`/`--fixed` without `--params`, an unknown preset (suggesting the nearest)
 * and any invalid field of a config or spec file (naming the file and the field).
 */
export function resolveWorkload(input: WorkloadInput): Workload {
  validateWorkloadInput(input);
  const affineGiven = input.params !== undefined || input.perSample !== undefined || input.fixed !== undefined;
  const sources = [
    input.model !== undefined ? "--model" : undefined,
    input.hfConfig !== undefined ? "--hf-config" : undefined,
    input.spec !== undefined ? "--spec" : undefined,
    affineGiven ? "--params" : undefined,
  ].filter((s): s is string => s !== undefined);
  if (sources.length === 0) throw invalidArgument("workload", "none", EXPECTED_SOURCE);
  if (sources.length > 1) throw invalidArgument(sources[1]!, `given with ${sources[0]}`, EXPECTED_SOURCE);

  if (input.model !== undefined) return presetByName(input.model);
  if (input.hfConfig !== undefined) {
    const file = parsedFile("hfConfig", input.hfConfig);
    return readHfConfig(file.path, file.json);
  }
  if (input.spec !== undefined) {
    const file = parsedFile("spec", input.spec);
    return readSpec(file.path, file.json);
  }

  if (input.params === undefined) throw invalidArgument(input.perSample !== undefined ? "--per-sample" : "--fixed", "given without --params", "--params N with --per-sample SIZE [--fixed SIZE]");
  if (input.perSample === undefined) throw invalidArgument("--per-sample", "none", "a size above 0 with --params (bytes each sample adds, e.g. 1GiB)");
  const perSampleBytes = sizeOption("--per-sample", input.perSample);
  if (perSampleBytes <= 0) throw invalidArgument("--per-sample", input.perSample, "a size above 0 (bytes each sample adds)");
  return {
    kind: "affine",
    parameterCount: parseSuffixedCount("--params", input.params, 1, { max: LIMITS.parameters, what: "a model's parameters" }),
    perSampleBytes,
    fixedBytes: input.fixed === undefined ? 0 : sizeOption("--fixed", input.fixed),
  };
}

// Strict parsers for option values: each returns a typed value or throws one clear line.
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";

/** A whole number ≥ `min` (accepts `7e9`), at most 2^53. */
export function parseCount(option: string, text: string, min = 1): number {
  const value = /^\s*[0-9]+(\.[0-9]+)?(e[+]?[0-9]+)?\s*$/i.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(value) || value < min || value > 2 ** 53) {
    throw invalidArgument(option, text, `a whole number${min > 0 ? ` ≥ ${min}` : " ≥ 0"}`);
  }
  return value;
}

export function parseSize(option: string, text: string): number {
  return parseBytes(text, option);
}

export function parseChoice<T extends string>(option: string, text: string, choices: readonly T[]): T {
  const found = choices.find((choice) => choice === text.toLowerCase());
  if (found === undefined) throw invalidArgument(option, text, `one of ${choices.join(", ")}`);
  return found;
}

/** `--device N|all`. */
export function parseDeviceSelection(text: string): number | "all" {
  if (text.toLowerCase() === "all") return "all";
  if (!/^\s*[0-9]+\s*$/.test(text)) throw invalidArgument("--device", text, "a CUDA device ordinal (0, 1, …) or all");
  return Number(text);
}

// Strict parsers for target and size option values: each returns a typed value or throws one clear line.
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";

export { parseCount } from "../count.js";
export { parseDuration } from "../duration.js";

export function parseSize(option: string, text: string): number {
  return parseBytes(text, option);
}

/** `--device N|all`. */
export function parseDeviceSelection(text: string): number | "all" {
  if (text.toLowerCase() === "all") return "all";
  if (!/^\s*[0-9]+\s*$/.test(text)) throw invalidArgument("--device", text, "a CUDA device ordinal (0, 1, …) or all");
  return Number(text);
}

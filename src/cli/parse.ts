// Strict parsers for target and size option values: each returns a typed value or throws one clear line.
import { uuidKey } from "../devices/nvmlMatch.js";
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";

export { parseCount } from "../count.js";
export { parseDuration } from "../duration.js";

export function parseSize(option: string, text: string): number {
  return parseBytes(text, option);
}

/** A size that must be above 0: a cap of nothing (`--max-mem 0`) or a requirement of nothing (`--need 0`) is a mistake. */
export function parsePositiveSize(option: string, text: string, why: string): number {
  const bytes = parseBytes(text, option);
  if (bytes === 0) throw invalidArgument(option, text, `a size above 0 (${why})`);
  return bytes;
}

/** A device as `--device` names it: a CUDA ordinal, or a UUID (`GPU-…`, `MIG-…`) as nvidia-smi -L prints it. */
export type DeviceId = number | `GPU-${string}` | `MIG-${string}`;

const DEVICE_EXPECTED = "a CUDA device ordinal (0, 1, …) or a UUID (GPU-…, MIG-…, as nvidia-smi -L prints it)";

/** `--device N|UUID` (plan: one device). */
export function parseDevice(text: string): DeviceId {
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed) && Number.isSafeInteger(Number(trimmed))) return Number(trimmed);
  if (uuidKey(trimmed) !== undefined) return trimmed as DeviceId;
  throw invalidArgument("--device", text, DEVICE_EXPECTED);
}

/** `--device N|UUID|all`. */
export function parseDeviceSelection(text: string): DeviceId | "all" {
  if (text.trim().toLowerCase() === "all") return "all";
  try {
    return parseDevice(text);
  } catch {
    throw invalidArgument("--device", text, `${DEVICE_EXPECTED}, or all`);
  }
}

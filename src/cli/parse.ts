// Strict parsers for target and size option values: each returns a typed value or throws one clear line.
import { isUuidOrPrefix, uuidKey } from "../devices/nvmlMatch.js";
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";
import { ALLOCATOR_KINDS, type AllocatorKind } from "../fit/allocator.js";

import { parseCount } from "../count.js";
import { parseDuration } from "../duration.js";

export { parseCount, parseDuration };

/**
 * Below this, a number without a unit is a size whose unit was forgotten (`--need 40`, `--reserve 5`):
 * no GPU budget, reserve or per-sample figure is under a mebibyte. 0 stays 0 (`--reserve 0`).
 */
export const BARE_BYTES_MIN = 2 ** 20;

/** Throws, suggesting the unit, for a bare number of bytes from 1 to below BARE_BYTES_MIN; returns the text. */
export function requireUnit(option: string, text: string): string {
  const bare = /^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?\s*$/i.exec(text);
  if (bare !== null) {
    const value = Number(text);
    if (value > 0 && value < BARE_BYTES_MIN) {
      throw invalidArgument(option, text, `a size with its unit, e.g. ${bare[1]}GiB or ${bare[1]}MiB (a number alone is bytes, and below 1 MiB it is taken for a missing unit)`);
    }
  }
  return text;
}

export function parseSize(option: string, text: string): number {
  return parseBytes(requireUnit(option, text), option);
}

/** A size that must be above 0: a cap of nothing (`--max-mem 0`) or a requirement of nothing (`--need 0`) is a mistake. */
export function parsePositiveSize(option: string, text: string, why: string): number {
  const bytes = parseSize(option, text);
  if (bytes === 0) throw invalidArgument(option, text, `a size above 0 (${why})`);
  return bytes;
}

/** A device as `--device` names it: a CUDA ordinal, or a UUID (`GPU-…`, `MIG-…`) as nvidia-smi -L prints it. */
export type DeviceId = number | `GPU-${string}` | `MIG-${string}`;

const DEVICE_EXPECTED = "a CUDA device ordinal (0, 1, …) or a UUID or its first characters (GPU-…, MIG-…, as nvidia-smi -L prints it)";

/** `--device N|UUID|UUID prefix` (plan: one device); which device a prefix names is decided against the visible ones. */
export function parseDevice(text: string): DeviceId {
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed) && Number.isSafeInteger(Number(trimmed))) return Number(trimmed);
  if (uuidKey(trimmed) !== undefined) return trimmed as DeviceId;
  if (isUuidOrPrefix(trimmed)) return `${trimmed.slice(0, 3).toUpperCase()}${trimmed.slice(3)}` as DeviceId;
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

/** `--calibrate B1,B2`: two batch sizes, B1 < B2. */
export function parseCalibration(text: string): [number, number] {
  const parts = text.split(",");
  const expected = "two batch sizes B1,B2 with 1 ≤ B1 < B2, e.g. 1,8";
  if (parts.length !== 2) throw invalidArgument("--calibrate", text, expected);
  const [b1, b2] = parts.map((part) => parseCount("--calibrate", part.trim())) as [number, number];
  if (b1 >= b2) throw invalidArgument("--calibrate", text, expected);
  return [b1, b2];
}

/** `--run-timeout`: a duration above zero (a run cannot be given no time at all). */
export function parsePositiveDuration(option: string, text: string): number {
  const ms = parseDuration(option, text);
  if (ms <= 0) throw invalidArgument(option, text, "a duration above 0, such as 10m, 90s or 500ms");
  return ms;
}

/** `--allocator pytorch|expandable|raw`. */
export function parseAllocator(text: string): AllocatorKind {
  const kind = ALLOCATOR_KINDS.find((k) => k === text.trim().toLowerCase());
  if (kind === undefined) throw invalidArgument("--allocator", text, ALLOCATOR_KINDS.join(", "));
  return kind;
}

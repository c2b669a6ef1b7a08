// Byte sizes in and out: strict parsing of `80GiB`, `80GB`, `1.5e9`, `512MiB`; IEC output.
import { invalidArgument } from "./errors.js";

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  // 8 PiB is 2^53 bytes, the largest size accepted: the unit that names the limit is accepted too.
  pb: 1e15,
  pib: 2 ** 50,
  // The short forms people type (`16G`, `512M`) mean the binary units, as in nvidia-smi and ls -h.
  k: 2 ** 10,
  m: 2 ** 20,
  g: 2 ** 30,
  t: 2 ** 40,
  p: 2 ** 50,
};

const SIZE_PATTERN = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e([+-]?[0-9]+))?\s*([a-z]*)$/i;
const MAX_BYTES = 2n ** 53n;

/**
 * Parses a byte size. Accepts a plain number of bytes (`1.5e9`) or a number with a unit
 * (`80GiB`, `80GB`, `512MiB`, `16G`, `8PiB`); the result must be a non-negative number of bytes
 * no larger than 2^53 = 8 PiB (beyond that a JS number cannot hold every byte count exactly).
 * One rounding rule: a fraction of a unit rounds to the nearest byte (`1.1KiB` = 1126 bytes,
 * `1e-3GiB` = 1073742 bytes), while a count of bytes (no unit, or `B`) must be whole: `1.3` and
 * `0.5B` are not sizes. The value is worked out exactly (in integers, never in floating point),
 * so `9007199254740993` is rejected rather than rounded down to 2^53.
 * Throws `ERR_INVALID_ARGUMENT` naming `option` on anything else: never a silent 0.
 */
export function parseBytes(text: string, option = "size"): number {
  if (typeof option !== "string") throw invalidArgument("option", option, "a string (the option the size is for, for messages)");
  const expected = "a size such as 80GiB, 512MiB, 40GB or 1.5e9 (bytes)";
  if (typeof text !== "string") throw invalidArgument(option, text, expected);
  const match = SIZE_PATTERN.exec(text.trim());
  if (!match) throw invalidArgument(option, text, expected);
  const [, mantissa = "", exponent = "0", unit = ""] = match;
  const scale = unit === "" ? 1 : UNIT_BYTES[unit.toLowerCase()];
  if (scale === undefined) throw invalidArgument(option, text, expected);
  const [whole = "", fraction = ""] = mantissa.split(".");
  const digits = BigInt(`${whole}${fraction}` || "0");
  if (digits === 0n) return 0;
  // value = digits × 10^power × scale, exactly; |power| is bounded before any power is taken.
  const power = Number(exponent) - fraction.length;
  const tooBig = () => invalidArgument(option, text, "a size of at most 8 PiB (2^53 bytes)");
  if (power > 0 && digits.toString().length + power > 20) throw tooBig();
  if (power < -400) throw invalidArgument(option, text, scale === 1 ? "a whole number of bytes" : "a size of at least half a byte, or 0");
  const numerator = digits * BigInt(scale) * (power > 0 ? 10n ** BigInt(power) : 1n);
  const denominator = power < 0 ? 10n ** BigInt(-power) : 1n;
  const bytes = numerator / denominator;
  const remainder = numerator % denominator;
  // A count of bytes is whole; a fraction of a larger unit rounds to the nearest byte.
  if (remainder !== 0n && scale === 1) throw invalidArgument(option, text, "a whole number of bytes");
  const nearest = 2n * remainder >= denominator ? bytes + 1n : bytes;
  if (nearest > MAX_BYTES) throw tooBig();
  return Number(nearest);
}

const IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] as const;

/**
 * Formats bytes in IEC units with up to `digits` decimals: `1.50 GiB`, `512 MiB`, `0 B`.
 * Throws `ERR_INVALID_ARGUMENT` for a number that is not finite or `digits` outside 0 to 20.
 */
export function formatBytes(bytes: number, digits = 2): string {
  if (typeof bytes !== "number" || !Number.isFinite(bytes)) throw invalidArgument("bytes", bytes, "a finite number");
  if (!Number.isInteger(digits) || digits < 0 || digits > 20) throw invalidArgument("digits", digits, "a whole number from 0 to 20");
  const sign = bytes < 0 ? "-" : "";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < IEC.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 || Number.isInteger(value) ? String(value) : value.toFixed(digits);
  return `${sign}${text} ${IEC[unit]}`;
}

/**
 * Two sizes shown side by side (a need and a budget): with as many digits as it takes for unequal
 * sizes to read unequal ("22.46 GiB of a 22.46 GiB budget" for a no reads as a contradiction), up
 * to six; past that, in bytes.
 */
export function formatBytesApart(a: number, b: number): [string, string] {
  for (let digits = 2; digits <= 6; digits += 1) {
    const shown: [string, string] = [formatBytes(a, digits), formatBytes(b, digits)];
    if (a === b || shown[0] !== shown[1]) return shown;
  }
  return [`${a} B`, `${b} B`];
}

/** Rounds `bytes` up to a multiple of `granularity` (the allocator's page). */
export function roundUp(bytes: number, granularity: number): number {
  if (granularity <= 1) return bytes;
  return Math.ceil(bytes / granularity) * granularity;
}

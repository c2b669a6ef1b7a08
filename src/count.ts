// Strict parsing of whole counts (parameters, batch sizes, tokens): `512`, `4096`, `7e9`, `1.5e9`.
import { invalidArgument } from "./errors.js";

const COUNT_PATTERN = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e\+?[0-9]+)?$/i;

/** A limit as messages print it: `16,777,216`, or `1e14` for the very large. */
export function formatLimit(n: number): string {
  return n >= 1e13 ? n.toExponential().replace("e+", "e") : n.toLocaleString("en-US");
}

/** An upper limit of a count and what it limits, for the message: `{ max: 2 ** 24, what: "a dimension" }`. */
export interface CountLimit {
  max: number;
  what: string;
}

/**
 * Parses a whole count. Throws `ERR_INVALID_ARGUMENT` naming `option` unless it is an integer
 * ≥ `min`, exactly representable (≤ 2^53) and within `limit` when one is given: never a silent
 * 0, never a rounded value.
 */
export function parseCount(option: string, value: string | number, min = 1, limit?: CountLimit): number {
  const text = String(value).trim();
  const expected = () =>
    limit !== undefined
      ? `a whole number from ${min} to ${formatLimit(limit.max)} (vramfit's limit on ${limit.what})`
      : min === 0
        ? "a whole number ≥ 0"
        : `a whole number ≥ ${min}`;
  if ((typeof value !== "string" && typeof value !== "number") || !COUNT_PATTERN.test(text)) throw invalidArgument(option, value, expected());
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || !exactlyWhole(text, n) || (limit !== undefined && n > limit.max)) throw invalidArgument(option, value, expected());
  return n;
}

/**
 * Whether the decimal text is exactly the integer `n`: Number() rounds `1.00000000000000001` to 1
 * and `9007199254740993` to 2^53, and a count must be neither rounded nor silently changed.
 */
function exactlyWhole(text: string, n: number): boolean {
  const [mantissa = "", exponentText = "0"] = text.toLowerCase().split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  const power = Number(exponentText) - fraction.length; // |exponent| ≤ 15 digits here: n is safe
  const digits = BigInt(`${whole}${fraction}` || "0");
  if (power >= 0) return digits * 10n ** BigInt(power) === BigInt(n);
  return digits === BigInt(n) * 10n ** BigInt(-power);
}

/** The suffixes model cards use for parameter counts: 125M, 7B, 1.8T. */
const COUNT_SUFFIX_EXPONENT: Record<string, number> = { k: 3, m: 6, b: 9, t: 12 };

/** A count that may carry a K, M, B or T suffix (`7B` is 7e9, `1.5T` is 1.5e12), else as parseCount. */
export function parseSuffixedCount(option: string, value: string | number, min = 1, limit?: CountLimit): number {
  const suffixed = typeof value === "string" ? /^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmbt])\s*$/i.exec(value) : null;
  if (suffixed === null) return parseCount(option, value, min, limit);
  try {
    return parseCount(option, `${suffixed[1]}e${COUNT_SUFFIX_EXPONENT[suffixed[2]!.toLowerCase()]}`, min, limit);
  } catch {
    // The message shows what was typed, not the rewritten text.
    return parseCount(option, value, min, limit);
  }
}

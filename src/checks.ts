// The argument checks every layer's validators share: each failure a VramfitError ERR_INVALID_ARGUMENT
// naming the argument's field (`options.maxBatch: expected …`), so the library is as strict as the CLI.
import { formatLimit } from "./count.js";
import { invalidArgument } from "./errors.js";

export type Fields = Record<string, unknown>;

/** `label` must be a plain object (not null, not an array); `optional` lets undefined through as {}. */
export function object(label: string, value: unknown, optional = false): Fields {
  if (value === undefined && optional) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw invalidArgument(label, shown(value), "an object");
  return value as Fields;
}

/** A value as messages show it: numbers as written (NaN, -5, 1.5), objects as their kind. */
export function shown(value: unknown): unknown {
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return value;
}

/** A field the function does not know is a typo, not something to ignore (`zero` for `zeroStage`). */
export function rejectUnknown(label: string, fields: Fields, known: readonly string[]): void {
  for (const key of Object.keys(fields)) {
    if (!known.includes(key)) throw invalidArgument(`${label}.${key}`, shown(fields[key]), `no such field (known: ${known.join(", ")})`);
  }
}

export function integer(label: string, value: unknown, min: number, max: number, what?: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max >= Number.MAX_SAFE_INTEGER ? `a whole number ≥ ${min}` : `a whole number from ${min} to ${formatLimit(max)}`;
    throw invalidArgument(label, shown(value), what === undefined ? range : `${range} (vramfit's limit on ${what})`);
  }
  return value;
}

/** A byte count: whole, ≥ min, at most 2^53. */
export function bytes(label: string, value: unknown, min = 0): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 2 ** 53) {
    throw invalidArgument(label, shown(value), `a whole number of bytes ≥ ${min}, at most 2^53`);
  }
  return value;
}

export function oneOf(label: string, value: unknown, allowed: readonly (string | number)[]): void {
  if (!allowed.includes(value as string | number)) throw invalidArgument(label, shown(value), `one of ${allowed.join(", ")}`);
}

export function boolean(label: string, value: unknown): void {
  if (typeof value !== "boolean") throw invalidArgument(label, shown(value), "true or false");
}

export function fn(label: string, value: unknown): void {
  if (typeof value !== "function") throw invalidArgument(label, shown(value), "a function");
}

export function string(label: string, value: unknown): void {
  if (typeof value !== "string") throw invalidArgument(label, shown(value), "a string");
}

export function abortSignal(label: string, value: unknown): void {
  if (!(value instanceof AbortSignal)) throw invalidArgument(label, shown(value), "an AbortSignal");
}

/** Each present field of `fields` checked by its checker; absent (undefined) ones are left alone. */
export function optionalFields(label: string, fields: Fields, checks: Record<string, (label: string, value: unknown) => void>): void {
  for (const [key, check] of Object.entries(checks)) {
    if (fields[key] !== undefined) check(`${label}.${key}`, fields[key]);
  }
}

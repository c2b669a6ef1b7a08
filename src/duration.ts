// Strict parsing of durations: `60` or `60s` (seconds), `500ms`, `2m`; never a silent 0.
import { invalidArgument } from "./errors.js";

const DURATION_PATTERN = /^([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m)?$/i;
const MAX_MS = 24 * 3600 * 1000;

/** Milliseconds (whole) for a duration; a bare number is seconds. At most a day. */
export function parseDuration(option: string, text: string): number {
  const match = DURATION_PATTERN.exec(text.trim());
  const unit = match?.[2]?.toLowerCase() ?? "s";
  const ms = match ? Math.round(Number(match[1]) * (unit === "ms" ? 1 : unit === "s" ? 1000 : 60_000)) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms > MAX_MS) {
    throw invalidArgument(option, text, "a duration such as 60 (seconds), 30s, 500ms or 2m, at most a day");
  }
  return ms;
}

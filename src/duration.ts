// Durations: strict parsing (`60` or `60s` (seconds), `500ms`, `2m`, `1h`; never a silent 0) and elapsed times as answers report them.
import { invalidArgument } from "./errors.js";

const DURATION_PATTERN = /^([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|min|h)?$/i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };
const MAX_MS = 24 * 3600 * 1000;

/** Milliseconds (whole) for a duration; a bare number is seconds. At most a day. */
export function parseDuration(option: string, text: string): number {
  const match = DURATION_PATTERN.exec(text.trim());
  const unit = match?.[2]?.toLowerCase() ?? "s";
  const ms = match ? Math.round(Number(match[1]) * UNIT_MS[unit]!) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms > MAX_MS) {
    throw invalidArgument(option, text, "a duration such as 60 (seconds), 30s, 500ms, 2m or 1h, at most a day");
  }
  return ms;
}

/**
 * A measured time for people, in the unit that keeps it short: `4.19 ms`, `812 ms`, `12.5 s`,
 * `3.2 min` (never `185823 ms`).
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** A duration as parseDuration reads it back: `10m`, `30s`, `500ms`. */
export function formatDurationOption(ms: number): string {
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** Milliseconds since `startedMs` (performance.now()), to 0.01 ms: JSON answers carry no 15-digit clock noise. */
export function elapsedMsSince(startedMs: number): number {
  return roundMs(performance.now() - startedMs);
}

/** A duration in milliseconds to 0.01 ms. */
export function roundMs(ms: number): number {
  return Math.round(ms * 100) / 100;
}

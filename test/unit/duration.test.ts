// Durations in (--lock-timeout) and out (the time column): strict, and in the unit that reads best.
import { describe, expect, it } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { formatDuration, parseDuration } from "../../src/duration.js";

describe("parseDuration", () => {
  it.each([
    ["60", 60_000],
    ["30s", 30_000],
    ["500ms", 500],
    ["2m", 120_000],
    ["2min", 120_000],
    ["1h", 3_600_000],
    ["24h", 86_400_000],
    ["0", 0],
  ])("%s is %d ms", (text, ms) => {
    expect(parseDuration("--lock-timeout", text)).toBe(ms);
  });

  it.each(["25h", "1d", "soon", "-1", "1.5.5s", ""])("rejects %j naming the option", (text) => {
    expect(() => parseDuration("--lock-timeout", text)).toThrow(VramfitError);
    expect(() => parseDuration("--lock-timeout", text)).toThrow(/^--lock-timeout: expected a duration such as 60 \(seconds\), 30s, 500ms, 2m or 1h, at most a day, got /);
  });
});

describe("formatDuration", () => {
  it.each([
    [4.186, "4.19 ms"],
    [812.4, "812 ms"],
    [12_500, "12.5 s"],
    [185_823, "3.1 min"],
    [192_000, "3.2 min"],
  ])("%d ms → %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

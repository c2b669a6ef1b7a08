// Byte sizes: strict parsing (never a silent 0) and IEC formatting.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { formatBytes, parseBytes, roundUp } from "../../src/units.js";

describe("parseBytes", () => {
  it.each([
    ["80GiB", 80 * 2 ** 30],
    ["80GB", 80e9],
    ["80 gb", 80e9],
    ["1.5e9", 1.5e9],
    ["512MiB", 512 * 2 ** 20],
    ["16G", 16 * 2 ** 30],
    ["1.5KiB", 1536],
    ["0", 0],
    ["123", 123],
    ["2e3kb", 2e6],
    // 8 PiB is the limit itself (2^53 bytes): the unit that names it is accepted.
    ["8PiB", 2 ** 53],
    ["8P", 2 ** 53],
    ["1PB", 1e15],
    // One rounding rule: a fraction of a unit rounds to the nearest byte, whatever its size.
    ["1.1KiB", 1126],
    ["1e-3GiB", 1073742],
    ["0.3GiB", 322122547],
    ["1.0000001KiB", 1024],
  ])("%s is %d bytes", (text, bytes) => {
    expect(parseBytes(text)).toBe(bytes);
  });

  it.each(["12parsecs", "", "GiB", "-1GiB", "1.3", "0.5B", "1e-3", "NaN", "Infinity", "1e400", "1,5GB", "9PiB", "1e16", "8.0000001PiB"])(
    "rejects %j with one line naming the option",
    (text) => {
      let error: unknown;
      try {
        parseBytes(text, "--memory");
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(VramfitError);
      expect((error as VramfitError).code).toBe("ERR_INVALID_ARGUMENT");
      expect((error as VramfitError).message).toMatch(/^--memory: expected .*, got /);
      expect((error as VramfitError).message).not.toContain("\n");
    },
  );

  it("round-trips whole byte counts up to 2^53", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (n) => {
        expect(parseBytes(String(n))).toBe(n);
      }),
    );
  });
});

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1024, "1 KiB"],
    [1536, "1.50 KiB"],
    [85520809984, "79.65 GiB"],
    [2 ** 40, "1 TiB"],
  ])("%d → %s", (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe("roundUp", () => {
  it("rounds to the allocation granularity", () => {
    const MiB = 2 ** 20;
    expect(roundUp(1, 2 * MiB)).toBe(2 * MiB);
    expect(roundUp(2 * MiB, 2 * MiB)).toBe(2 * MiB);
    expect(roundUp(2 * MiB + 1, 2 * MiB)).toBe(4 * MiB);
  });
});

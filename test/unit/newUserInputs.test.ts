// What a new user typed and vramfit misread (issue 25, items 5, 7 and 8): bare sizes, a config
// given by its path, a byte-order mark, a parameter count with a suffix.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSize } from "../../src/cli/parse.js";
import { resolveWorkload } from "../../src/index.js";

const gpt2 = resolve(import.meta.dirname, "..", "fixtures", "hf", "gpt2.json");

describe("a size without a unit", () => {
  it.each(["40", "5", "1e3", "1048575", "0.5e6"])("%s below 1 MiB is refused, suggesting the unit", (text) => {
    expect(() => parseSize("--need", text)).toThrow(new RegExp(`^--need: expected a size with its unit, e\\.g\\. .*GiB or .*MiB .*got "${text.replace(".", "\\.")}"`));
  });
  it.each([
    ["0", 0],
    ["1048576", 1048576],
    ["1.5e9", 1.5e9],
    ["40GiB", 40 * 2 ** 30],
    ["512KiB", 512 * 1024],
  ])("%s is %d bytes", (text, bytes) => {
    expect(parseSize("--need", text)).toBe(bytes);
  });
});

describe("resolveWorkload", () => {
  it("takes an HF config or a spec by its path, as it takes { path, json }", () => {
    const byPath = resolveWorkload({ hfConfig: gpt2 });
    expect(byPath).toEqual(resolveWorkload({ hfConfig: { path: gpt2, json: JSON.parse(readFileSync(gpt2, "utf8")) } }));
    expect(byPath).toMatchObject({ name: expect.stringContaining("gpt2") });
    expect(() => resolveWorkload({ hfConfig: "/nonexistent/config.json" })).toThrow(/^hfConfig: expected a readable JSON file \(ENOENT\)/);
  });

  it("reads a file that starts with a UTF-8 byte-order mark", () => {
    const path = join(mkdtempSync(join(tmpdir(), "vramfit-bom-")), "config.json");
    writeFileSync(path, `\uFEFF${readFileSync(gpt2, "utf8")}`);
    expect({ ...resolveWorkload({ hfConfig: path }), name: "" }).toEqual({ ...resolveWorkload({ hfConfig: gpt2 }), name: "" });
  });

  it.each([
    ["7B", 7e9],
    ["1.5b", 1.5e9],
    ["350M", 350e6],
    ["1.8T", 1.8e12],
    ["125K", 125e3],
    ["7e9", 7e9],
  ])("--params %s is %d parameters", (text, count) => {
    expect(resolveWorkload({ params: text, perSample: "1GiB" })).toMatchObject({ parameterCount: count });
  });

  it("refuses a suffix it does not know, showing what was typed", () => {
    expect(() => resolveWorkload({ params: "7X", perSample: "1GiB" })).toThrow(/^--params: expected .*got "7X"/);
  });
});

describe("an empty environment variable is unset (issue 25, item 8)", () => {
  it("VRAMFIT_LOCK_DIR= and VRAMFIT_PROC_MEMINFO= fall back to the defaults", async () => {
    const { defaultLockDirectory, privateLockDirectory } = await import("../../src/devices/deviceLock.js");
    const { memAvailableBytes } = await import("../../src/devices/systemMemory.js");
    const saved = { lock: process.env.VRAMFIT_LOCK_DIR, meminfo: process.env.VRAMFIT_PROC_MEMINFO };
    try {
      process.env.VRAMFIT_LOCK_DIR = "";
      process.env.VRAMFIT_PROC_MEMINFO = "";
      expect(defaultLockDirectory()).toBe(privateLockDirectory());
      // An empty path would be unreadable (undefined); the default, /proc/meminfo, gives a number. Not compared
      // with a second read of /proc/meminfo: MemAvailable moves between two reads on a busy machine (CI beside hogs).
      expect(memAvailableBytes("")).toBeUndefined();
      expect(memAvailableBytes()).toEqual(expect.any(Number));
    } finally {
      for (const [name, value] of [["VRAMFIT_LOCK_DIR", saved.lock], ["VRAMFIT_PROC_MEMINFO", saved.meminfo]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe("elapsedMs (issue 25, item 10)", () => {
  it("is reported to 0.01 ms, not with 15 digits of clock noise", async () => {
    const { findMaxBatchByRunning } = await import("../../src/index.js");
    const run = (batch: number) => ({ fits: batch <= 37, peakBytes: 2 ** 30 + batch * 2 ** 24 });
    const result = await findMaxBatchByRunning(run, { budgetBytes: 2 ** 30 + 37.5 * 2 ** 24 });
    const hundredths = result.elapsedMs * 100;
    expect(Math.abs(hundredths - Math.round(hundredths))).toBeLessThan(1e-6);
    expect(String(result.elapsedMs)).toMatch(/^\d+(\.\d{1,2})?$/);
  });
});

describe("--exec's run lines (issue 25, item 10)", () => {
  it("stay aligned past batch 999,999: the verdict and the peak start in the same column at any batch up to nine digits", async () => {
    const { describeRun } = await import("../../src/cli/execCommand.js");
    const line = (batch: number) => describeRun({ batch, fits: true, peakBytes: 2 ** 30, peakSource: "job", seconds: 0.5, exitCode: 0 }, 1);
    const columns = [1, 999_999, 1_234_567, 123_456_789].map((batch) => [line(batch).indexOf("fits"), line(batch).indexOf("peak")]);
    expect(new Set(columns.map(String)).size).toBe(1);
  });
});

describe("--gpu with a bare number (issue 25, item 10)", () => {
  it("suggests --memory and the catalog GPUs of that size, never an unrelated id (`8` suggested T4)", async () => {
    const { findGpu } = await import("../../src/devices/catalog.js");
    const { nearest } = await import("../../src/suggest.js");
    expect(() => findGpu("8")).toThrow(/^--gpu: expected a catalog GPU id, got "8"; for 8 GB of GPU memory give --memory 8GB \(run `vramfit gpus` for the catalog\)$/);
    expect(() => findGpu("80")).toThrow(/give --memory 80GB, or a GPU of that size: A100-80GB, H100-80GB/);
    expect(nearest(["T4", "L4"], "8")).toBeUndefined(); // two edits from a one-character query: nothing in common
    expect(nearest(["T4", "L4"], "t5")).toBe("T4");
  });
});

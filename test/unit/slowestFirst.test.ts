// vitest.config.ts's slowest-first order (test/slowest-first.json): it names test files that exist, and
// scripts/slowest-first.mjs rewrites it from a run's per-file times, leaving out files that are gone.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SLOWEST_FIRST, slowestFirst, slowestFirstRank } from "../slowestFirst.js";
import { root } from "../cli/runCli.js";

describe("the slowest-first order of the test files", () => {
  it("names test files that exist (a renamed or removed file fails here: node scripts/slowest-first.mjs LOG)", () => {
    expect(SLOWEST_FIRST.length).toBeGreaterThan(5);
    expect(SLOWEST_FIRST.filter((file) => !/^test\/.+\.test\.ts$/.test(file) || !existsSync(join(root, file)))).toEqual([]);
    expect(new Set(SLOWEST_FIRST).size).toBe(SLOWEST_FIRST.length);
    expect(slowestFirst.files.every((f) => Number.isFinite(f.seconds) && f.seconds > 0)).toBe(true);
    expect(slowestFirst.measured).not.toBe("");
  });

  it("puts the files it names first, longest first, and every other file after them", () => {
    const longest = [...slowestFirst.files].sort((a, b) => b.seconds - a.seconds);
    expect(slowestFirstRank(join(root, longest[0]!.file))).toBe(0);
    expect(slowestFirstRank(join(root, longest[1]!.file))).toBe(1);
    expect(slowestFirstRank(join(root, "test", "unit", "slowestFirst.test.ts"))).toBe(SLOWEST_FIRST.length);
    // By the whole name: a file whose name only ends like a listed one's is not it.
    expect(slowestFirstRank(join(root, "test", "x", `my${longest[0]!.file.split("/").pop()}`))).toBe(SLOWEST_FIRST.length);
  });

  it("scripts/slowest-first.mjs keeps the N slowest files of a run's output that exist here, longest first", () => {
    const dir = mkdtempSync(join(tmpdir(), "vramfit-slowest-"));
    const log = [
      "\x1b[32m✓\x1b[39m test/unit/layers.test.ts \x1b[2m(12 tests)\x1b[22m\x1b[33m 11752\x1b[2mms\x1b[22m\x1b[39m",
      " ✓ test/cli/gpuAll.test.ts (4 tests) 144014ms",
      " ✓ test/unit/no-such-file.test.ts (3 tests) 500000ms",
      " ✓ test/cli/batch.test.ts (40 tests | 2 skipped) 8087ms",
      "   ✓ a test inside a file, not a file 90000ms",
    ].join("\n");
    writeFileSync(join(dir, "ci.log"), `${log}\n`);
    const out = join(dir, "slowest.json");
    const run = spawnSync(process.execPath, [join(root, "scripts", "slowest-first.mjs"), join(dir, "ci.log"), "--top", "2", "--measured", "a test run", "--out", out], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("not in this checkout, left out: test/unit/no-such-file.test.ts");
    expect(JSON.parse(readFileSync(out, "utf8"))).toEqual({
      measured: "a test run",
      files: [{ file: "test/cli/gpuAll.test.ts", seconds: 144 }, { file: "test/unit/layers.test.ts", seconds: 12 }],
    });
    const empty = spawnSync(process.execPath, [join(root, "scripts", "slowest-first.mjs"), out], { encoding: "utf8" });
    expect(empty.status).toBe(1);
  });
});

// Every example output in the README is vramfit's own, regenerated and compared (timings aside): a change that
// moves an answer fails here until `node scripts/readme-examples.mjs` rewrites the README.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const check = (readme: string) =>
  spawnSync(process.execPath, ["scripts/readme-examples.mjs", "--check", "--readme", readme], { cwd: root, encoding: "utf8", timeout: 120_000 });

describe("README examples", () => {
  it("the README stays a front door: at most 250 lines (the reference lives in docs/)", () => {
    expect(readFileSync(join(root, "README.md"), "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(250);
  });

  it("are what vramfit prints today (regenerate: node scripts/readme-examples.mjs)", () => {
    const run = check(join(root, "README.md"));
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("a changed answer is caught: the plan example with one byte count altered is stale", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const altered = readme.replace(/(<!-- plan-example:begin -->[\s\S]*?total\s+)(\d+\.\d\d)/, (_, before: string, bytes: string) => `${before}${(Number(bytes) + 1).toFixed(2)}`);
    expect(altered).not.toBe(readme);
    const file = join(mkdtempSync(join(tmpdir(), "vramfit-readme-")), "README.md");
    writeFileSync(file, altered);
    const run = check(file);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("stale example output in plan-example");
  });
});

// The floors of src/ (.dependency-cruiser.cjs): no import cycle, no import up a floor; the rules are shown to bite on a fixture.
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const depcruise = join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
  cycle?: { name: string }[];
}

/** The violations dependency-cruiser finds under `folder` with the project's rules (it exits non-zero when there are some). */
async function violations(folder: string): Promise<{ modules: number; found: string[] }> {
  const run = promisify(execFile)(process.execPath, [depcruise, folder, "--config", ".dependency-cruiser.cjs", "--output-type", "json"], { cwd: root, maxBuffer: 64 * 2 ** 20 });
  const { stdout } = await run.catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
  const report = JSON.parse(stdout) as { summary: { totalCruised: number; violations: Violation[] } };
  const found = report.summary.violations.map((v) => `${v.rule.name}: ${v.from.replace(`${folder}/`, "")} → ${v.to.replace(`${folder}/`, "")}`);
  return { modules: report.summary.totalCruised, found: found.sort() };
}

describe("the floors of src/", () => {
  it("has no import cycle and no import up a floor", async () => {
    const { modules, found } = await violations("src");
    expect(found).toEqual([]);
    expect(modules).toBeGreaterThan(100); // the whole of src/ was read, not an empty folder
  }, 120_000);

  it("refuses an upward import and a cycle, even of types", async () => {
    const { found } = await violations("test/fixtures/layers/src");
    expect(found).toEqual([
      "no-circular: cli/first.ts → cli/second.ts",
      "no-upward-from-fit: fit/search.ts → job/run.ts",
      "no-upward-from-plan: plan/reachesUp.ts → fit/fits.ts",
    ]);
  }, 120_000);
});

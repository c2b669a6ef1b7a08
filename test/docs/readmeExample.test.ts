// The README's library example is run, not trusted: on the simulated GPU its output must be the
// one the README shows, and with no driver it must still answer (analytically).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readmeBlock, runLibraryExample } from "../../scripts/readme-library-example.mjs";
import { NO_DRIVER, simulatedGpus } from "../cli/runCli.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const code = readmeBlock(readme, "library-example");

describe("README library example", () => {
  it("uses every entry point of the one import", () => {
    for (const name of ["devices", "memGetInfo", "findMaxBatch", "checkFits", "planMemory"]) expect(code).toContain(`${name}(`);
    expect(code).toMatch(/from "vramfit";/);
  });

  it("prints on the simulated H100 what the README shows (regenerate: node scripts/readme-examples.mjs)", async () => {
    const run = await runLibraryExample(code, simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472"));
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout.trimEnd()).toBe(readmeBlock(readme, "library-example-output"));
    expect(run.stdout).toContain("[device, probes: 2]"); // the answer, and the next batch refused at the reserve
  });

  it("answers analytically for the fallback GPU when there is no driver", async () => {
    const run = await runLibraryExample(code, NO_DRIVER);
    expect(run.status).toBe(0);
    expect(run.stdout).not.toContain("GPU 0");
    expect(run.stdout).toMatch(/^largest batch \d+ \[analytic, probes: 0\]/m);
    expect(run.stdout).not.toContain("free now");
  });
});

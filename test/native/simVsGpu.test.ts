// scripts/sim-vs-gpu.mjs measures on a GPU what the simulator assumes; here it runs against the
// simulator itself, where every case must agree: this checks the script, and that its statement of
// the simulator's rule (simulatedBytes) is the rule native/sim implements.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

import { DEFAULT_CONTEXT_BYTES, nvmlSimulatorPath, simulatorPath } from "./simulator.js";

const script = fileURLToPath(new URL("../../scripts/sim-vs-gpu.mjs", import.meta.url));

describe("scripts/sim-vs-gpu.mjs", () => {
  it("on the simulator: every allocation case agrees, and the context is the default, gone after release", () => {
    const run = spawnSync(process.execPath, [script], {
      env: {
        PATH: process.env.PATH ?? "",
        VRAMFIT_CUDA_LIBRARY: simulatorPath,
        VRAMFIT_NVML_LIBRARY: nvmlSimulatorPath,
        CUDASIM_DEVICES: "NVIDIA L4:24000000000",
      },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.agrees).toBe(true);
    expect(Object.keys(report.allocations)).toHaveLength(7);
    expect(report.allocations["1000 x 1 KiB"]).toMatchObject({ measuredBytes: 2 * 1024 ** 2, agrees: true });
    expect(report.context).toMatchObject({ beforeBytes: 0, measuredBytes: DEFAULT_CONTEXT_BYTES, afterReleaseBytes: 0 });
  });
});

// scripts/gpu-validate.mjs runs with only Node and the build outputs; here against the simulator.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { nvmlSimulator, root, simulatedGpus } from "./runCli.js";

describe("scripts/gpu-validate.mjs", () => {
  it("passes every check on a simulated H100 and reports the figures", () => {
    const run = spawnSync(process.execPath, [resolve(root, "scripts", "gpu-validate.mjs")], {
      env: {
        PATH: "/nonexistent",
        ...simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472", {
          // NVML, and one device for the CLI processes it starts: their probes are seen, and a
          // touched probe lasts 100 ms, long enough for SIGINT to land inside one.
          VRAMFIT_NVML_LIBRARY: nvmlSimulator,
          CUDASIM_STATE: join(mkdtempSync(join(tmpdir(), "vramfit-validate-")), "ledger"),
          CUDASIM_SYNC_DELAY_MS: "100",
        }),
      },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.pass).toBe(true);
    expect(report.backend.kind).toBe("cuda");
    expect(report.checks.infoMatchesNvidiaSmi.pass).toBeNull(); // no nvidia-smi on PATH: skipped, not passed
    // free = 82,299,584,512 B = 39,243.5 pages of 2 MiB: the largest allocation is 39,243 pages.
    expect(report.checks.probeBoundary).toMatchObject({ pass: true, largestAllocationBytes: 39243 * 2 ** 21, gapBytes: 2 ** 20 });
    expect(report.checks.noLeakAfter100Probes).toMatchObject({ pass: true, freeBefore: 82299584512, freeAfter: 82299584512, probesThatFit: 50 });
    // 1e9 fp32 + SGD: 2 segments of 1,908 pages = 8,002,732,032 B; free less the default reserve
    // (4,276,040,500), the segments and the 512 MiB job context, / 512 MiB = 129.4. Two probes:
    // 129 fits, and the addon refuses 130 at the reserve.
    expect(report.checks.batchSearch).toMatchObject({ pass: true, batchSize: 129, predictedBatchSize: 129, probes: 2 });
    // Through NVML and the CLI.
    expect(report.checks.nvmlMatchesNvidiaSmi.pass).toBeNull(); // no nvidia-smi to compare with
    expect(report.checks.infoCreatesNoContext).toMatchObject({ pass: true, memorySource: "nvml" });
    expect(report.checks.sigintDuringProbe).toMatchObject({ pass: true, status: 130, signalLandedMidProbe: true });
    expect(report.checks.sigintDuringProbe.usedAfterBytes).toBe(report.checks.sigintDuringProbe.usedBeforeBytes);
    expect(report.checks.concurrentProcesses).toMatchObject({ pass: true, alone: 129, together: [129, 129, 129, 129] });
    expect(report.checks.concurrentProcesses.waited).toBeGreaterThanOrEqual(1);
    // Issue 11: the context is released (NVML shows this process holding nothing), and the two
    // measurements are reported (their simulated times mean nothing).
    expect(report.checks.contextReleased).toMatchObject({ pass: true, heldAfterReleaseBytes: 0, heldAfterFindMaxBatchBytes: 0, jobContextBytes: 512 * 2 ** 20 });
    expect(report.checks.touchCost.pass).toBeNull();
    expect(report.checks.keepWarm.pass).toBeNull();
    for (const key of ["driverLoad", "contextCreationAndFirstMemGetInfo", "memGetInfoMedian", "probe1GiBTouchedMedian"]) {
      expect(report.timingsMs[key]).toBeGreaterThan(0);
    }
  });
});

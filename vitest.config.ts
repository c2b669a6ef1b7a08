// Test runner settings: each file in its own forked process, because the native addon binds one
// CUDA driver (real or simulated) per process and tests vary the driver's environment.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

import { ciResourceGroup, slowestFirstRank } from "./test/slowestFirst.js";

// The slowest files start first (longest first), so that none of them is left running alone at the end: in a clean
// clone vitest has no timings and starts the largest files first, and gpuAll (110 s beside two CPU hogs) ran last,
// on one worker. The names and seconds are test/slowest-first.json's, from one clean-clone CI run beside two CPU hogs
// (`node scripts/slowest-first.mjs LOG` rewrites it from a run's output; test/unit/slowestFirst.test.ts fails when a
// file it names no longer exists). Files not named keep vitest's own order after these.
// In CI (VRAMFIT_CI_RESOURCES set: .ci/run makes the venvs and the prebuilds beside the tests), the files that wait on
// nothing go first, then those that wait on the CPU venv, the CUDA venv, the prebuilds (ciResourceGroup).
const inCi = Boolean(process.env.VRAMFIT_CI_RESOURCES);
class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((file, at) => ({ file, at, rank: slowestFirstRank(file.moduleId), group: inCi ? ciResourceGroup(readFileSync(file.moduleId, "utf8")) : 1 }))
      .sort((a, b) => a.group - b.group || a.rank - b.rank || a.at - b.at)
      .map(({ file }) => file);
  }
}

export default defineConfig({
  test: {
    pool: "forks",
    include: ["test/**/*.test.ts"],
    // In CI the first files run beside the installs (pip, debootstrap, the prebuilds' compiles, pytest): a limit is only
    // there to end a hung test, and 30 s (and vitest's 10 s for a hook) ended a fuzz test at 31 s beside two CPU hogs
    // at load 15.
    testTimeout: inCi ? 120_000 : 30_000,
    hookTimeout: inCi ? 120_000 : 10_000,
    // The tests mostly wait: on spawned CLIs, on the simulated driver's latencies, on child
    // processes. vitest's default (one worker fewer than the cores) runs one file at a time on a
    // 2-core machine; three keep both cores busy. Measured on the 2-core CI machine beside two
    // CPU hogs (`yes > /dev/null`): npm test took 486 s with one worker, 148 s with three, 128 s
    // with five, every test passing each time.
    maxWorkers: Math.max(3, availableParallelism()),
    sequence: { sequencer: SlowestFirst },
  },
});

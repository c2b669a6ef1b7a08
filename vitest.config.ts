// Test runner settings: each file in its own forked process, because the native addon binds one
// CUDA driver (real or simulated) per process and tests vary the driver's environment.
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// The slowest files start first (longest first), so that none of them is left running alone at the end: in a clean
// clone vitest has no timings and starts the largest files first, and gpuAll (110 s beside two CPU hogs) ran last,
// on one worker. Seconds are from a clean-clone CI run of 8753d65 beside two `yes > /dev/null` hogs. A name that
// goes stale only loses its place; files not named keep vitest's own order after these.
const SLOWEST_FIRST = [
  "test/reference/genuineAllocator.test.ts", // 176 s
  "test/cli/gpuAll.test.ts", // 110
  "test/package/prebuilds.test.ts", // 95
  "test/job/simulatedGpu.test.ts", // 91
  "test/package/pack.test.ts", // 80
  "test/docs/readmeExamples.test.ts", // 68
  "test/cli/traceCommand.test.ts", // 48
  "test/cli/torchReference.test.ts", // 37
  "test/examples/examples.test.ts", // 35
  "test/unit/sharedAnswers.test.ts", // 29
  "test/job/llamaCpuEquality.test.ts", // 29
  "test/cli/bench.test.ts", // 28
  "test/cli/optionsTable.test.ts", // 26
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = SLOWEST_FIRST.findIndex((name) => file.moduleId.replaceAll("\\", "/").endsWith(`/${name}`));
      return at < 0 ? SLOWEST_FIRST.length : at;
    };
    const sorted = await super.sort(files);
    return sorted.map((file, at) => ({ file, at, rank: rank(file) })).sort((a, b) => a.rank - b.rank || a.at - b.at).map(({ file }) => file);
  }
}

export default defineConfig({
  test: {
    pool: "forks",
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // The tests mostly wait: on spawned CLIs, on the simulated driver's latencies, on child
    // processes. vitest's default (one worker fewer than the cores) runs one file at a time on a
    // 2-core machine; three keep both cores busy. Measured on the 2-core CI machine beside two
    // CPU hogs (`yes > /dev/null`): npm test took 486 s with one worker, 148 s with three, 128 s
    // with five, every test passing each time.
    maxWorkers: Math.max(3, availableParallelism()),
    sequence: { sequencer: SlowestFirst },
  },
});

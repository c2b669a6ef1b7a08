// Test runner settings: each file in its own forked process, because the native addon binds one
// CUDA driver (real or simulated) per process and tests vary the driver's environment.
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

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
  },
});

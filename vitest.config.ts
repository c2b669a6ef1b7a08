// Test runner settings: each file in its own forked process, because the native addon binds one
// CUDA driver (real or simulated) per process and tests vary the driver's environment.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    pool: "forks",
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
  },
});

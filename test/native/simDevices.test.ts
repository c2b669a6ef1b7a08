// The simulated driver's devices side by side: each has its own lock and allocation table (so the
// device threads of a probe of eight do not wait on one another), yet a pointer still names one
// allocation in the process, freed from any context, and every byte comes back. Driven through
// the driver's C ABI by a small program built here (test/native/sim/devices_driver.cc).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

import { MiB, simulatorPath } from "./simulator.js";

const source = fileURLToPath(new URL("./sim/devices_driver.cc", import.meta.url));
const cxx = process.env.CXX ?? "g++";
const H100 = "NVIDIA H100 80GB HBM3:85045477376:0";

describe.skipIf(spawnSync(cxx, ["--version"]).status !== 0)("the simulated driver's devices, each with its own lock", () => {
  let program = "";
  beforeAll(() => {
    program = join(mkdtempSync(join(tmpdir(), "vramfit-sim-devices-")), "devices_driver");
    const build = spawnSync(cxx, ["-std=c++17", "-O1", "-pthread", source, "-o", program, "-ldl"], { encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
  }, 60_000);

  function run(devices: number, args: string[]) {
    const env = { PATH: process.env.PATH ?? "", CUDASIM_DEVICES: Array.from({ length: devices }, () => H100).join(";"), CUDASIM_CONTEXT_BYTES: "0" };
    // A deadlock between two devices' locks would hang: the limit turns it into a failure.
    const result = spawnSync(program, [simulatorPath, ...args], { env, encoding: "utf8", timeout: 60_000 });
    expect(result.signal, "the program did not finish").toBeNull();
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  }

  it("frees a pointer from another device's context (unified addressing), once; memset stays within the current device's allocations", () => {
    expect(run(2, ["unified"])).toEqual({
      held: 3 * 4 * MiB, // three 3 MiB allocations, each rounded up to whole 2 MiB pages
      insideA: 0,
      pastA: 1, // one byte past what was requested: CUDA_ERROR_INVALID_VALUE
      freedB: 1,
      aBelowFreedB: 0, // a freed allocation above a held one does not hide it
      cAboveFreedB: 0,
      memsetFromSecond: 1, // device 0's memory is not device 1's current context's
      freeFromSecond: 0,
      freeAgain: 1,
      freeUnknown: 1, // inside an allocation, not its start
      secondChanged: 0, // freeing device 0's pointer from device 1 changed nothing on device 1
      firstReturned: 2 * 4 * MiB, // b, then a (freed from device 1) came back to device 0
      firstBackToStart: true,
    });
  });

  it("eight devices allocating at once, then freeing each other's pointers in a ring, lose nothing and share no address", () => {
    const rounds = 30;
    const result = run(8, ["threads", "8", String(rounds)]);
    expect(result).toEqual({ failures: 0, allocations: 8 * rounds * 200, distinctAddresses: 8 * rounds * 200, backToStart: true });
  });
});

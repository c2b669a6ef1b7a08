// The host budget for --offload: --host-memory, else MemAvailable from /proc/meminfo.
import { describe, expect, test } from "vitest";
import { hostBudget } from "../../src/cli/hostMemory.js";

describe("host memory", () => {
  test("--host-memory wins; else MemAvailable; unknown when neither can be had", () => {
    expect(hostBudget(2 ** 40, () => 5)).toEqual({ bytes: 2 ** 40, source: "--host-memory" });
    expect(hostBudget(undefined, () => 120515112 * 1024)).toEqual({ bytes: 120515112 * 1024, source: "MemAvailable" });
    expect(hostBudget(undefined, () => undefined)).toBeUndefined();
  });
});

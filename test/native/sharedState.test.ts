// CUDASIM_STATE: processes that name one ledger file see one device, as processes sharing a real
// GPU do; and what a killed process held stays held (so a test can see what it left behind).
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, addonPath, devicesText, simulatorPath, startNvml, startSimulator, temporaryPath } from "./simulator.js";

const TOTAL = 16 * GiB;
const CONTEXT = 256 * MiB;
const devices = [{ name: "NVIDIA L40S", totalBytes: TOTAL }];
const stateFile = temporaryPath("ledger");

// A second process: creates its context on device 0, says so, and holds it until told to exit.
const holder = `
  const addon = require(${JSON.stringify(addonPath)});
  (async () => {
    await addon.loadDriver(${JSON.stringify(simulatorPath)});
    await addon.memGetInfo(0);
    process.stdout.write("ready\\n");
    process.stdin.once("data", () => process.stdin.destroy());
  })();
`;

let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({ devices, contextBytes: CONTEXT, stateFile }));
  await startNvml(); // NVML reads the ledger without a context of its own
});

async function startHolder(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", holder], {
    env: { CUDASIM_DEVICES: devicesText(devices), CUDASIM_CONTEXT_BYTES: String(CONTEXT), CUDASIM_STATE: stateFile },
    stdio: ["pipe", "pipe", "inherit"],
  });
  await once(child.stdout!, "data");
  return child;
}

async function nvmlFree(): Promise<number> {
  return (await addon.nvmlDevices())[0]!.memory!.freeBytes;
}

describe("a shared ledger", () => {
  it("shows another process's context, and its pid, until that process exits", async () => {
    expect(await nvmlFree()).toBe(TOTAL);
    const child = await startHolder();
    expect(await nvmlFree()).toBe(TOTAL - CONTEXT);
    expect((await addon.nvmlDevices())[0]!.processes).toEqual([{ pid: child.pid, usedBytes: CONTEXT, gpuInstanceId: null, computeInstanceId: null }]);
    // This process's own driver sees it too: its free memory is the other's loss as well.
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - 2 * CONTEXT);
    child.stdin!.write("exit\n");
    await once(child, "exit");
    expect(await nvmlFree()).toBe(TOTAL - CONTEXT); // only ours is left
  });

  it("keeps what a killed process held (the real driver would reclaim it)", async () => {
    const child = await startHolder();
    child.kill("SIGKILL");
    await once(child, "exit");
    expect(await nvmlFree()).toBe(TOTAL - 2 * CONTEXT);
  });
});

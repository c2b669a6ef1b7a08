// The addon in worker threads: per-environment error class, one process-wide driver.
import { Worker } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, addonPath, rejection, simulatorPath, startSimulator } from "./simulator.js";

// Plain CommonJS: worker threads do not go through vitest's TypeScript transform.
const workerSource = `
  const { parentPort } = require("node:worker_threads");
  const addon = require(${JSON.stringify(addonPath)});
  class WorkerError extends Error {
    constructor(code, message, options = {}) {
      super(message);
      Object.assign(this, { code, fromWorker: true }, options);
    }
  }
  addon.setErrorClass(WorkerError);
  (async () => {
    const info = await addon.loadDriver(${JSON.stringify(simulatorPath)});
    const probe = await addon.probe(0, [${MiB}], { touch: true });
    const error = await addon.memGetInfo(5).catch((e) => ({ code: e.code, fromWorker: e.fromWorker }));
    parentPort.postMessage({ info, probe, error });
  })().catch((e) => parentPort.postMessage({ failed: String(e) }));
`;

let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({ devices: [{ name: "NVIDIA T4", totalBytes: GiB }], contextBytes: 0 }));
});

describe("worker threads", () => {
  it("share the loaded driver and build errors with their own class", async () => {
    const worker = new Worker(workerSource, { eval: true });
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    const message = await new Promise((resolve) => worker.once("message", resolve));
    await exited;
    expect(message).toEqual({
      info: { version: 12040, libraryPath: simulatorPath, uuidV2: true },
      probe: {
        fits: true,
        failedIndex: -1,
        allocated: 1,
        freeBytesAtPeak: GiB - 2 * MiB,
        limit: null,
        allocatedBytes: MiB,
        freeBytesAtStart: GiB,
        minFreeBytes: GiB - 2 * MiB,
        headroomBytes: 0,
        virtualMemory: false,
      },
      error: { code: "ERR_INVALID_DEVICE", fromWorker: true },
    });
  });

  it("leave the main thread's addon working after they exit", async () => {
    expect(await addon.probe(0, [GiB], { touch: true })).toMatchObject({ fits: true, freeBytesAtPeak: 0 });
    expect((await rejection(addon.memGetInfo(5))).code).toBe("ERR_INVALID_DEVICE");
  });
});

// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as the simulated driver applies them (the way CUDA
// documents it): each case is its own process, since the driver reads them once, at cuInit.
import { spawnSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";

import { GiB, addonPath, devicesText, nvmlSimulatorPath, simulatorPath } from "./simulator.js";

const machine = devicesText([
  { name: "A", totalBytes: 8 * GiB, extras: ["bus=3B"] },
  { name: "B", totalBytes: 8 * GiB, extras: ["bus=1A"] },
  { name: "C", totalBytes: 8 * GiB, extras: ["bus=2C", `mig=${2 * GiB}+${2 * GiB}`] },
  { name: "D", totalBytes: 8 * GiB, extras: ["bus=4D"] },
]);

const script = `
  const addon = require(${JSON.stringify(addonPath)});
  (async () => {
    try {
      await addon.loadDriver(${JSON.stringify(simulatorPath)});
    } catch (error) {
      return console.log(JSON.stringify({ error: error.code }));
    }
    const devices = (await addon.devices()).map((d) => ({ name: d.name, uuid: d.uuid }));
    await addon.loadNvml(${JSON.stringify(nvmlSimulatorPath)});
    const nvml = (await addon.nvmlDevices()).map((d) => d.uuid);
    console.log(JSON.stringify({ devices, nvml }));
  })();
`;

interface Listing {
  devices?: { name: string; uuid: string }[];
  nvml?: string[];
  error?: string;
}

function list(env: Record<string, string>): Listing {
  const run = spawnSync(process.execPath, ["-e", script], { env: { CUDASIM_DEVICES: machine, ...env }, encoding: "utf8" });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout) as Listing;
}

function names(env: Record<string, string>): string[] | string {
  const listing = list(env);
  return listing.error ?? listing.devices!.map((d) => d.name);
}

let uuids: Record<string, string>;

beforeAll(() => {
  // NVML's view: every GPU and instance, in PCI bus order: B, C, C's two instances, A, D.
  const { nvml } = list({});
  const [b, c, c0, c1, a, d] = nvml!;
  uuids = { a: a!, b: b!, c: c!, c0: c0!, c1: c1!, d: d! };
});

describe("without CUDA_VISIBLE_DEVICES", () => {
  it("lists GPUs fastest first (CUDASIM_DEVICES order), a MIG GPU as its first instance only", () => {
    expect(names({})).toEqual(["A", "B", "C MIG 2gb", "D"]);
  });

  it("CUDA_DEVICE_ORDER=PCI_BUS_ID lists them in bus order, as NVML does", () => {
    expect(names({ CUDA_DEVICE_ORDER: "PCI_BUS_ID" })).toEqual(["B", "C MIG 2gb", "A", "D"]);
  });
});

describe("CUDA_VISIBLE_DEVICES", () => {
  it("indices select and reorder", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: "3,1" })).toEqual(["D", "B"]);
  });

  it("indices follow CUDA_DEVICE_ORDER", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: "0", CUDA_DEVICE_ORDER: "PCI_BUS_ID" })).toEqual(["B"]);
  });

  it("the list ends at the first invalid entry: 0,2,-1,1 shows 0 and 2", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: "0,2,-1,1" })).toEqual(["A", "C MIG 2gb"]);
    expect(names({ CUDA_VISIBLE_DEVICES: "1,7,0" })).toEqual(["B"]);
  });

  it("a device named twice ends the list there too", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: "1,1,0" })).toEqual(["B"]);
  });

  it("GPU- UUIDs, full or a unique prefix, select whole GPUs", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: `${uuids.d},${uuids.a!.slice(0, 12)}` })).toEqual(["D", "A"]);
  });

  it("an ambiguous prefix, or nothing valid at all, leaves no device", () => {
    expect(names({ CUDA_VISIBLE_DEVICES: "GPU-" })).toBe("ERR_NO_DEVICE");
    expect(names({ CUDA_VISIBLE_DEVICES: "" })).toBe("ERR_NO_DEVICE");
  });

  it("MIG- UUIDs select one instance, and a process sees one MIG device at most", () => {
    const second = list({ CUDA_VISIBLE_DEVICES: uuids.c1! });
    expect(second.devices!.map((d) => d.name)).toEqual(["C MIG 2gb"]);
    expect(second.devices![0]!.uuid).toBe(uuids.c1); // the same 16 bytes as NVML's, and the same MIG- name
    expect(names({ CUDA_VISIBLE_DEVICES: `${uuids.c1},${uuids.c0},1` })).toEqual(["C MIG 2gb", "B"]);
    expect(list({ CUDA_VISIBLE_DEVICES: `${uuids.c1},${uuids.c0}` }).devices!.map((d) => d.uuid.slice(4))).toEqual([uuids.c1!.slice(4)]);
  });

  it("NVML ignores it: every GPU, whatever CUDA shows", () => {
    expect(list({ CUDA_VISIBLE_DEVICES: "1" }).nvml).toEqual(Object.values({ b: uuids.b, c: uuids.c, c0: uuids.c0, c1: uuids.c1, a: uuids.a, d: uuids.d }));
  });
});

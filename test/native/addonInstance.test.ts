// One addon per process: the library loads it without require's resolution (src/native/binding.ts, openNative), and still gets the instance require gives, whichever of the two loads it first.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openBackend } from "../../src/native/binding.js";
import { GiB, addonPath, devicesText, simulatorPath } from "./simulator.js";

const devices = [{ name: "NVIDIA A100-SXM4-40GB", totalBytes: 40 * GiB }];

describe("the addon, loaded by the library and by require", () => {
  it("the library first: require then finds the library's instance", async () => {
    process.env.CUDASIM_DEVICES = devicesText(devices);
    const backend = await openBackend({ cudaLibrary: simulatorPath });
    expect(backend.kind).toBe("cuda");
    if (backend.kind !== "cuda") return;
    expect(createRequire(import.meta.url)(addonPath)).toBe(backend.addon);
  });

  it("require first (a caller of its own, in a fresh process): the library takes that instance, and its driver is the one loaded", () => {
    const binding = fileURLToPath(new URL("../../dist/native/binding.js", import.meta.url));
    const script = `
      import { createRequire } from "node:module";
      const first = createRequire(import.meta.url)(${JSON.stringify(addonPath)});
      const { openBackend } = await import(${JSON.stringify(binding)});
      const backend = await openBackend({ cudaLibrary: ${JSON.stringify(simulatorPath)} });
      process.stdout.write(JSON.stringify({ kind: backend.kind, same: backend.addon === first, devices: (await first.devices()).length }));
    `;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", env: { PATH: process.env.PATH, CUDASIM_DEVICES: devicesText(devices) } });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual({ kind: "cuda", same: true, devices: 1 });
  });
});

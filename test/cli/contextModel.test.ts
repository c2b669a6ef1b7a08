// One context model: the job's CUDA context charged the same through every path (device probe,
// NVML, catalog GPU, --memory, --analytic), and no context left behind by a library call.
import { describe, expect, it } from "vitest";
import { nvmlSimulator, root, runJson, simulatedGpus, spawnCollected } from "./runCli.js";

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const T4_TOTAL = 15642329088; // the catalog's T4 (deviceQuery), so the simulated one is the same GPU
const CONTEXT = 300 * MiB; // what a context costs on this simulated driver (vramfit's own, here)
const T4 = simulatedGpus(`Tesla T4:${T4_TOTAL}:0`, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_CONTEXT_BYTES: String(CONTEXT) });

/** Runs an ES module against the built library (`vramfit` is dist/index.js) and parses the JSON it prints. */
async function library<T>(body: string, env: Record<string, string>): Promise<T> {
  const script = `import * as vramfit from ${JSON.stringify(`${root}/dist/index.js`)};\n${body}`;
  const run = await spawnCollected(process.execPath, ["--input-type=module", "-e", script], { env: { PATH: process.env.PATH ?? "", ...env } }).finished;
  if (run.status !== 0) throw new Error(`library script exited ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

describe("the T4 check --need case answers the same through every path", () => {
  // The reserve is 5% of the total, ⌈15,642,329,088 × 0.05⌉ = 782,116,455 B: a budget of
  // 14,860,212,633 B. A need is one allocation, a segment rounded up to 2 MiB, plus the job's
  // 512 MiB context: the largest that fits is 6,829 × 2 MiB = 14,321,451,008 B (6,830 pages
  // would take 14,323,548,160 + 536,870,912 > 14,860,212,633).
  const FITS = 6829 * 2 * MiB;
  const OVER = FITS + 1;

  const paths: [string, (need: number) => Promise<boolean>][] = [
    ["NVML, no context (check --need on the device)", async (need) => (await runJson<{ fits: boolean; memorySource: string }>(["check", "--need", String(need)], T4)).json.fits],
    ["--analytic on the device (NVML's free memory)", async (need) => (await runJson<{ fits: boolean }>(["check", "--need", String(need), "--analytic"], T4)).json.fits],
    ["the catalog's T4 (--gpu T4)", async (need) => (await runJson<{ fits: boolean }>(["check", "--need", String(need), "--gpu", "T4"], T4)).json.fits],
    ["a raw budget of the T4's memory (--memory)", async (need) => (await runJson<{ fits: boolean }>(["check", "--need", String(need), "--memory", String(T4_TOTAL)], T4)).json.fits],
    [
      "a probe with vramfit's own 300 MiB context live (checkFits on the device)",
      (need) => library<boolean>(`const r = await vramfit.checkFits({ description: "need", parameterCount: 0, tensors: [{ name: "need", category: "workspace", fixedBytes: ${need}, perSampleBytes: 0 }] }, 0, { device: 0 }); console.log(JSON.stringify(r.fits));`, T4),
    ],
  ];

  it.each(paths)("%s: fits at the largest need, not one byte above", async (_, fits) => {
    expect(await fits(FITS)).toBe(true);
    expect(await fits(OVER)).toBe(false);
  });

  it("the probe charges only what vramfit's own context has not already taken", async () => {
    const r = await library<{ ownContextBytes: number; jobContextBytes: number; budgetBytes: number; device: { freeBytes: number }; memorySource: string }>(
      `console.log(JSON.stringify(await vramfit.checkFits({ description: "need", parameterCount: 0, tensors: [{ name: "need", category: "workspace", fixedBytes: ${GiB}, perSampleBytes: 0 }] }, 0, { device: 0 })));`,
      T4,
    );
    expect(r.memorySource).toBe("cuda");
    expect(r.device.freeBytes).toBe(T4_TOTAL - CONTEXT); // read with vramfit's context live
    expect(r.ownContextBytes).toBe(CONTEXT); // NVML's figure for this process
    expect(r.jobContextBytes).toBe(512 * MiB);
    expect(r.budgetBytes).toBe(T4_TOTAL - 782116455); // the context vramfit holds is the job's to use
  });

  it("--job-context changes the charge on every path alike", async () => {
    const bigger = ["--job-context", "1GiB"];
    const nvml = await runJson<{ fits: boolean; needBytes: number }>(["check", "--need", String(FITS), ...bigger], T4);
    const catalog = await runJson<{ fits: boolean; needBytes: number }>(["check", "--need", String(FITS), "--gpu", "T4", ...bigger], T4);
    expect([nvml.json.fits, catalog.json.fits]).toEqual([false, false]);
    expect(nvml.json.needBytes).toBe(FITS + GiB);
    expect(catalog.json.needBytes).toBe(FITS + GiB);
  });
});

describe("vramfit plan shows the context", () => {
  it("as breakdown.context, the documented 512 MiB default, or --job-context", async () => {
    const plan = await runJson<{ breakdown: Record<string, number>; totalBytes: number; allocator: string }>(["plan", "--model", "resnet50", "--batch", "8"]);
    expect(plan.json.breakdown.context).toBe(512 * MiB);
    expect(plan.json.allocator).toBe("pytorch");
    expect(Object.values(plan.json.breakdown).reduce((a, b) => a + b, 0)).toBe(plan.json.totalBytes);
    const set = await runJson<{ breakdown: Record<string, number> }>(["plan", "--model", "resnet50", "--batch", "8", "--job-context", "1GiB"]);
    expect(set.json.breakdown.context).toBe(GiB);
  });
});

describe("no context left behind by the library", () => {
  const L4 = simulatedGpus(`NVIDIA L4:${24 * GiB}:0`, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_CONTEXT_BYTES: String(CONTEXT) });
  const plan = `vramfit.planMemory({ kind: "affine", parameterCount: 1e8, perSampleBytes: 2 ** 28, fixedBytes: 0 }, { mode: "train", precision: "fp32", optimizer: "sgd" })`;
  /** What NVML says this process holds on device 0 (0 when it is not listed). */
  const held = `(await vramfit.deviceProcesses(0)).find((p) => p.pid === process.pid)?.usedBytes ?? 0`;

  it("after findMaxBatch, checkFits, memGetInfo and devices return, the process holds 0 bytes on the GPU", async () => {
    const after = await library<number[]>(
      `const plan = ${plan}; const out = [];
       await vramfit.findMaxBatch(plan, { device: 0 }); out.push(${held});
       await vramfit.checkFits(plan, 4, { device: 0 }); out.push(${held});
       await vramfit.memGetInfo(0); out.push(${held});
       await vramfit.devices(); out.push(${held});
       console.log(JSON.stringify(out));`,
      L4,
    );
    expect(after).toEqual([0, 0, 0, 0]);
  });

  it("keepWarm keeps it for the next call; releaseDevices gives it back", async () => {
    const seen = await library<number[]>(
      `const plan = ${plan}; const out = [];
       await vramfit.findMaxBatch(plan, { device: 0, keepWarm: true }); out.push(${held});
       out.push((await vramfit.releaseDevices()).length); out.push(${held});
       console.log(JSON.stringify(out));`,
      L4,
    );
    expect(seen).toEqual([CONTEXT, 1, 0]);
  });

  it("a session keeps it warm between calls and gives it back at the end of `await using`", async () => {
    const seen = await library<number[]>(
      `const plan = ${plan}; const out = [];
       {
         const session = vramfit.openSession();
         try {
           await session.findMaxBatch(plan); out.push(${held});
           await session.checkFits(plan, 2); out.push(${held});
         } finally {
           await session[Symbol.asyncDispose]();
         }
       }
       out.push(${held});
       console.log(JSON.stringify(out));`,
      L4,
    );
    expect(seen).toEqual([CONTEXT, CONTEXT, 0]);
  });
});

// The stub CUDA runtime (native/stubs/cudart, build/Release/stubs/cuda13 and cuda12): its sonames
// and symbol versions, every function torch 2.14.1 imports from libcudart.so.13, and how it behaves
// (a real GPU's properties, memory that runs out at the simulated device's capacity, real error
// names, device->host reads of zeros, the peak counters), driven through its C ABI by a small
// program built here (test/native/stubs/cudart_probe.cc).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

import { DEFAULT_CONTEXT_BYTES, GiB, MiB } from "./simulator.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

const buildDir = fileURLToPath(new URL("../../build/Release/stubs/", import.meta.url));
const stub = { 13: `${buildDir}cuda13/libcudart.so.13`, 12: `${buildDir}cuda12/libcudart.so.12` };
const probeSource = fileURLToPath(new URL("./stubs/cudart_probe.cc", import.meta.url));
const abiCheckSource = fileURLToPath(new URL("./stubs/cudart_abi_check.cc", import.meta.url));
const cxx = process.env.CXX ?? "g++";

const H100 = "NVIDIA H100 80GB HBM3:85520809984";
const A100 = "NVIDIA A100-SXM4-40GB:42505273344:cc=8.0:sm=108";

function readelf(args: string[]): string {
  const run = spawnSync("readelf", args, { encoding: "utf8", maxBuffer: 256 * MiB });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

/** `name@version` of every symbol a library defines (exports) or needs (imports). */
function dynamicSymbols(path: string, which: "defined" | "undefined"): string[] {
  const symbols = new Set<string>();
  for (const line of readelf(["--dyn-syms", "-W", path]).split("\n")) {
    const [index, , , , , , section, name] = line.trim().split(/\s+/);
    if (name === undefined || !index!.endsWith(":")) continue;
    if ((section === "UND") !== (which === "undefined") || !name.includes("@")) continue;
    symbols.add(name.replace(/@@?/, "@"));
  }
  return [...symbols].sort();
}

const hasReadelf = spawnSync("readelf", ["--version"]).status === 0;

describe.skipIf(!hasReadelf)("the stub runtime's ELF identity", () => {
  for (const major of [13, 12] as const) {
    it(`libcudart.so.${major}: its soname, and every export under the symbol version libcudart.so.${major}`, () => {
      expect(readelf(["-d", stub[major]])).toContain(`Library soname: [libcudart.so.${major}]`);
      const exported = dynamicSymbols(stub[major], "defined").filter((s) => !s.startsWith(`libcudart.so.${major}@`));
      expect(exported.length).toBeGreaterThan(100);
      expect(exported.filter((s) => !s.endsWith(`@libcudart.so.${major}`))).toEqual([]);
      expect(exported.filter((s) => !/^_?_?cuda/.test(s))).toEqual([]);  // nothing of the C++ inside leaks
    });
  }
  it("libcudart.so.12 has CUDA 12's versioned names too", () => {
    const exported = dynamicSymbols(stub[12], "defined");
    for (const name of ["cudaGetDeviceProperties_v2", "cudaStreamGetCaptureInfo_v2", "cudaGraphAddNode_v2", "cudaGetDriverEntryPoint"]) {
      expect(exported).toContain(`${name}@libcudart.so.12`);
    }
  });
});

// The wheel where it lies: torch/lib of VRAMFIT_TORCH_CUDA_PYTHON's torch, found without importing it
// (import torch needs the stubs on the loader's path).
function torchLib(python: string): string {
  const run = spawnSync(python, ["-c", "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('torch').origin))"], { encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  return join(run.stdout.trim(), "lib");
}

const cudaPython = process.env.VRAMFIT_TORCH_CUDA_PYTHON;
describe.skipIf(!hasReadelf || !cudaPython)("every function torch 2.14.1 imports from libcudart.so.13", () => {
  it("is exported by the stub, under libcudart.so.13 (libc10_cuda.so imports 45 of them)", () => {
    const lib = torchLib(cudaPython!);
    // A torch without libc10_cuda.so is a CPU build: the venv is wrong, which must not pass as a skip.
    expect(existsSync(join(lib, "libc10_cuda.so")), `${lib} has no libc10_cuda.so: not torch 2.14.1's CUDA build`).toBe(true);
    const imports = new Set<string>();
    for (const file of readdirSync(lib).filter((f) => f.endsWith(".so"))) {
      for (const symbol of dynamicSymbols(join(lib, file), "undefined")) {
        if (symbol.endsWith("@libcudart.so.13")) imports.add(symbol);
      }
    }
    const c10Cuda = dynamicSymbols(join(lib, "libc10_cuda.so"), "undefined").filter((s) => s.endsWith("@libcudart.so.13"));
    expect(c10Cuda).toHaveLength(45);
    expect(imports.size).toBeGreaterThanOrEqual(100);
    const exported = new Set(dynamicSymbols(stub[13], "defined"));
    expect([...imports].filter((s) => !exported.has(s))).toEqual([]);
  }, 120_000); // readelf over every torch library: 10 s alone at load 17, 36 s beside three other test files
});

// The real headers, where there are some: the CI's nvidia-cuda-runtime wheel, else a toolkit.
const cudaInclude = [process.env.VRAMFIT_CUDA_INCLUDE, "/usr/local/cuda/include"].find(
  (dir) => dir !== undefined && dir !== "" && existsSync(join(dir, "cuda_runtime_api.h")),
);
describe.skipIf(cudaInclude === undefined)("the stub's structs against CUDA 13's driver_types.h", () => {
  it("every field of cudaDeviceProp, cudaPointerAttributes and cudaFuncAttributes at CUDA 13's offset", () => {
    const run = spawnSync(cxx, ["-std=c++17", "-fsyntax-only", `-I${cudaInclude}`, abiCheckSource], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
  });
});

describe("the stub runtime's behaviour", () => {
  let probe = "";
  beforeAll(() => {
    probe = join(mkdtempSync(join(tmpdir(), "vramfit-cudart-")), "cudart_probe");
    const build = spawnSync(cxx, ["-std=c++17", "-O1", probeSource, "-o", probe, stub[13], `-Wl,-rpath,${buildDir}cuda13`], { encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
  }, 60_000);

  function run(env: Record<string, string>, args: string[] = []) {
    const result = spawnSync(probe, args, { env: { PATH: process.env.PATH ?? "", ...env }, encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    return { json: JSON.parse(result.stdout), stderr: result.stderr };
  }

  it("an H100 answers with an H100's properties and attributes (cc 9.0, 132 SMs, 2048 threads and 228 KiB per SM, 50 MiB L2)", () => {
    const { json } = run({ CUDASIM_DEVICES: H100 });
    expect(json).toMatchObject({
      count: 1,
      propError: 0,
      name: "NVIDIA H100 80GB HBM3",
      totalGlobalMem: 85520809984,
      major: 9,
      minor: 0,
      multiProcessorCount: 132,
      warpSize: 32,
      l2CacheSize: 50 * MiB,
      maxThreadsPerMultiProcessor: 2048,
      sharedMemPerMultiprocessor: 228 * 1024,
      sharedMemPerBlockOptin: 227 * 1024,
      attributes: [9, 0, 132, 2048, 227 * 1024],
      badDeviceError: 101,
      runtimeVersion: 13000,
      driverVersion: 13000,
    });
  });

  it("cc=8.0 makes it an A100 (164 KiB shared memory per SM, 40 MiB L2); sm= sets the SMs", () => {
    const { json } = run({ CUDASIM_DEVICES: A100 });
    expect(json).toMatchObject({ major: 8, minor: 0, multiProcessorCount: 108, l2CacheSize: 40 * MiB, sharedMemPerMultiprocessor: 164 * 1024, sharedMemPerBlockOptin: 163 * 1024 });
  });

  it("l2= overrides the architecture's L2", () => {
    const { json } = run({ CUDASIM_DEVICES: `${H100}:l2=${60 * MiB}` });
    expect(json.l2CacheSize).toBe(60 * MiB);
  });

  it("cudaMalloc fails with cudaErrorMemoryAllocation (2) past the capacity, counting what is held and the context", () => {
    const bare = run({ CUDASIM_DEVICES: A100, CUDASIM_CONTEXT_BYTES: "0" }, ["fill", String(GiB)]).json;
    expect(bare).toMatchObject({ allocations: Math.floor(42505273344 / GiB), error: 2, errorName: "cudaErrorMemoryAllocation", lastError: 2, afterTake: 0 });
    expect(bare.freeAtFull).toBe(42505273344 - bare.allocations * GiB);
    expect(bare.freeAfter).toBe(42505273344);
    const withContext = run({ CUDASIM_DEVICES: A100 }, ["fill", String(GiB)]).json;
    expect(withContext.allocations).toBe(Math.floor((42505273344 - DEFAULT_CONTEXT_BYTES) / GiB));
  });

  it("no devices: cudaGetDeviceCount says cudaErrorNoDevice (100) with the real texts; a malformed machine says why", () => {
    expect(run({}).json).toEqual({ countError: 100, count: 0, errorName: "cudaErrorNoDevice", errorString: "no CUDA-capable device is detected" });
    const bad = run({ CUDASIM_DEVICES: "NVIDIA H100:lots" });
    expect(bad.json).toMatchObject({ countError: 3, errorName: "cudaErrorInitializationError" });
    expect(bad.stderr).toMatch(/^vramfit cudart stub: CUDASIM_DEVICES: expected name:totalBytes/);
  });

  it("device->host copies read zeros and are counted; the counters file and the peak line say what the process held at most", () => {
    const dir = mkdtempSync(join(tmpdir(), "vramfit-counters-"));
    const { json, stderr } = run({ CUDASIM_DEVICES: H100, VRAMFIT_STUB_COUNTERS: join(dir, "counters-%p.txt"), VRAMFIT_STUB_PEAK_LINE: "1" });
    expect(json).toMatchObject({ deviceToHost: 0, readZeros: true, devicePointerType: 2, hostPointerType: 0, oomName: "cudaErrorMemoryAllocation", oomString: "out of memory", unknownName: "unrecognized error code" });
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^counters-[0-9]+\.txt$/);
    const counters = Object.fromEntries(readFileSync(join(dir, files[0]!), "utf8").trim().split("\n").map((l) => l.split("=")));
    // The context and one 3000-byte allocation, charged at 512-byte alignment (3072 B).
    const peak = DEFAULT_CONTEXT_BYTES + 3072;
    expect(counters).toMatchObject({ VRAMFIT_PEAK_BYTES: String(peak), "device0.peakBytes": String(peak), peakMallocBytes: "3000", mallocCalls: "1", freeCalls: "1", deviceToHostCopies: "1", deviceToHostBytes: "3000" });
    expect(stderr).toContain(`VRAMFIT_PEAK_BYTES=${peak}\n`);
  });
});

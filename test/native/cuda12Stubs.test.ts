// The CUDA 12 stubs (build/Release/stubs/cuda12), as far as they can be tested with no CUDA 12 torch and no CUDA 12
// headers here (issue 20): each library's soname and symbol version, every function torch 2.14.1's CUDA 13 build
// imports under the CUDA 12 library's version, and a program that calls the CUDA 12 set through CUDA 12's ABI
// (cudaGetDeviceProperties_v2 into CUDA 12's cudaDeviceProp), all against CUDA 12.5's headers reduced to names and
// layouts (test/fixtures/cuda12-headers.json). Not tested: a real CUDA 12 torch's own import list, and a PyTorch job
// on these stubs (docs/exec.md says so).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readElfDynamic } from "../../src/job/elfSymbols.js";
import { root } from "../cli/runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

/** CUDA 12.5's headers, reduced to names and layouts (scripts/reference/cuda12-headers.mjs). */
const headers = JSON.parse(readFileSync(join(root, "test", "fixtures", "cuda12-headers.json"), "utf8")) as { runtimeFunctions: string[]; runtimeRenames: Record<string, string>; cublasFunctions: string[]; deviceProp: { size: number; fields: [string, number, number][] } };

const cuda12 = join(root, "build", "Release", "stubs", "cuda12");
const cuda13 = join(root, "build", "Release", "stubs", "cuda13");
/** Each library a CUDA 12 torch links, by soname, and the soname of its CUDA 13 counterpart. */
const LIBRARIES = [
  ["libcudart.so.12", "libcudart.so.13"],
  ["libcublas.so.12", "libcublas.so.13"],
  ["libcublasLt.so.12", "libcublasLt.so.13"],
  ["libcudnn.so.9", "libcudnn.so.9"],
] as const;

describe("the CUDA 12 stubs' identity: what the loader matches a CUDA 12 torch's DT_NEEDED and versioned imports with", () => {
  it.each(LIBRARIES.map(([soname]) => soname))("%s: its soname, and every export versioned with it", (soname) => {
    const elf = readElfDynamic(join(cuda12, soname));
    expect(elf.soname).toBe(soname);
    expect(elf.exports.length).toBeGreaterThan(10);
    expect(elf.exports.filter((s) => s.version !== soname).map((s) => `${s.name}@${s.version}`)).toEqual([]);
  });

  it("libcuda.so.1 of the folder is the simulated driver (the real one versions nothing)", () => {
    const elf = readElfDynamic(join(cuda12, "libcuda.so.1"));
    expect(elf.soname).toBe("libcuda.so.1");
    expect(elf.exports.map((s) => s.name)).toEqual(expect.arrayContaining(["cuInit", "cuMemAlloc_v2", "cuGetErrorString"]));
  });
});

const cudaPython = process.env.VRAMFIT_TORCH_CUDA_PYTHON;
if (!cudaPython) console.log("test/native/cuda12Stubs.test.ts: the import-list test skips: VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)");
describe.skipIf(!cudaPython)("the functions torch 2.14.1 (CUDA 13) imports, under the CUDA 12 libraries' versions", () => {
  it("each is exported by the CUDA 12 stub of the same library, and so are CUDA 12's own names for the runtime's renamed ones", () => {
    const found = spawnSync(cudaPython!, ["-c", "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('torch').origin))"], { encoding: "utf8" });
    expect(found.status, found.stderr).toBe(0);
    const lib = join(found.stdout.trim(), "lib");
    expect(existsSync(join(lib, "libtorch_cuda.so"))).toBe(true);
    const imports = new Map<string, Set<string>>(LIBRARIES.map(([, of13]) => [of13, new Set<string>()]));
    for (const file of readdirSync(lib).filter((f) => /\.so(\.|$)/.test(f))) {
      for (const symbol of readElfDynamic(join(lib, file)).imports) {
        if (symbol.library !== null) imports.get(symbol.library)?.add(symbol.name);
      }
    }
    for (const [soname12, soname13] of LIBRARIES) {
      const wanted = [...imports.get(soname13)!];
      expect(wanted.length, soname13).toBeGreaterThan(10);
      const exported = new Set(readElfDynamic(join(cuda12, soname12)).exports.map((s) => s.name));
      expect(wanted.filter((name) => !exported.has(name)), soname12).toEqual([]);
    }
    // CUDA 12.x's cuda_runtime_api.h maps these calls to versioned entry points (cudaGetDeviceProperties to _v2 from
    // 12.0; capture and graph dependencies with edges as _v2/_v3 from 12.3; cudaGetDriverEntryPoint before 12.5's
    // ByVersion), which CUDA 13 folded back into the plain names: a CUDA 12 torch imports those names instead.
    const only12 = ["cudaGetDeviceProperties_v2", "cudaGetDriverEntryPoint", "cudaGraphAddNode_v2", "cudaGraphNodeGetDependencies_v2", "cudaStreamGetCaptureInfo_v2", "cudaStreamGetCaptureInfo_v3", "cudaStreamUpdateCaptureDependencies_v2"];
    // (Less the version's own definition symbol, which carries the soname.)
    const runtime12 = readElfDynamic(join(cuda12, "libcudart.so.12")).exports.map((s) => s.name).filter((name) => name !== "libcudart.so.12");
    const runtime13 = new Set(readElfDynamic(join(cuda13, "libcudart.so.13")).exports.map((s) => s.name));
    expect(runtime12.filter((name) => !runtime13.has(name)).sort()).toEqual(only12);

    // Against CUDA 12.5's headers (test/fixtures/cuda12-headers.json): each runtime function torch imports that CUDA
    // 12.5 declares, under the name CUDA 12.5's header sends the call to, is in the CUDA 12 stub; those CUDA 12.5 does
    // not declare are the registration internals (crt/host_runtime.h), the profiler's (cuda_profiler_api.h) and four
    // functions newer than 12.5, which the stub exports all the same.
    const exported12 = new Set(runtime12);
    const declared = new Set(headers.runtimeFunctions);
    const cudart = [...imports.get("libcudart.so.13")!];
    const as12 = cudart.filter((name) => declared.has(name)).map((name) => headers.runtimeRenames[name] ?? name);
    expect(as12.length).toBeGreaterThanOrEqual(85);
    expect(as12.filter((name) => !exported12.has(name))).toEqual([]);
    const undeclared = cudart.filter((name) => !declared.has(name) && !name.startsWith("__cuda") && !name.startsWith("cudaProfiler")).sort();
    expect(undeclared).toEqual(["cudaKernelSetAttributeForDevice", "cudaLibraryGetKernel", "cudaLibraryLoadData", "cudaLibraryUnload"]);
    // cuBLAS: every function torch imports is one cuBLAS 12.5 declares, so the same source built on CUDA 12 calls names
    // the stub (which exports exactly torch's list) has.
    const blas = new Set(headers.cublasFunctions);
    expect([...imports.get("libcublas.so.13")!].filter((name) => !blas.has(name))).toEqual([]);
  });
});

describe.skipIf(spawnSync("g++", ["--version"]).status !== 0)("the stub's cudaDeviceProp for CUDA 12 against CUDA 12.5's driver_types.h", () => {
  it("every field at CUDA 12.5's offset with its size, and the struct's size (1,032 bytes)", () => {
    const dir = mkdtempSync(join(tmpdir(), "vramfit-cuda12-prop-"));
    const { size, fields } = headers.deviceProp;
    const program = [
      "#include <cstddef>",
      "#include <cstdio>",
      `#include "${join(root, "native", "stubs", "cudart", "cudart_abi.h")}"`,
      "using P = cudart::DeviceProp12;",
      `int main() { std::printf("%zu\\n", sizeof(P));`,
      ...fields.map(([name]) => `  std::printf("${name} %zu %zu\\n", offsetof(P, ${name}), sizeof(P::${name}));`),
      "}",
    ].join("\n");
    writeFileSync(join(dir, "prop.cc"), program);
    const build = spawnSync("g++", ["-std=c++17", "-o", join(dir, "prop"), join(dir, "prop.cc")], { encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
    const [ours, ...rows] = spawnSync(join(dir, "prop"), { encoding: "utf8" }).stdout.trim().split("\n");
    expect(rows.map((row) => row.split(" ").map((v, i) => (i === 0 ? v : Number(v))))).toEqual(fields);
    expect(Number(ours)).toBe(size);
  });
});

// A program that calls the CUDA 12 set as a CUDA 12 build would: its own declarations (no headers), linked against
// libcudart.so.12, libcublas.so.12 and libcublasLt.so.12 by soname. The cudaDeviceProp prefix is CUDA 12.x's
// driver_types.h (unchanged from CUDA 10 to 12.9: name, uuid, luid, luidDeviceNodeMask, then the sizes and limits
// with clockRate before totalConstMem; CUDA 13 dropped clockRate, so there major sits 8 bytes earlier).
const PROBE = String.raw`
#include <stddef.h>
#include <stdio.h>
#include <string.h>
struct Prop12 {
  char name[256]; char uuid[16]; char luid[8]; unsigned luidDeviceNodeMask;
  size_t totalGlobalMem, sharedMemPerBlock; int regsPerBlock, warpSize; size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate; size_t totalConstMem;
  int major, minor; size_t textureAlignment, texturePitchAlignment; int deviceOverlap, multiProcessorCount;
};
int cudaRuntimeGetVersion(int*);
int cudaGetDeviceProperties_v2(void*, int);
int cudaMalloc(void**, size_t);
int cudaFree(void*);
int cublasCreate_v2(void**);
int cublasSetWorkspace_v2(void*, void*, size_t);
int cublasDestroy_v2(void*);
int cublasLtMatmulDescCreate(void**, int, int);
size_t cublasLtGetCudartVersion(void);
int main(void) {
  static unsigned char buffer[4096];
  memset(buffer, 0xAB, sizeof buffer);
  struct Prop12* p = (struct Prop12*)buffer;
  int version = 0, propError, bigError, workspaceError;
  void *big = NULL, *workspace = NULL, *blas = NULL, *lt = NULL;
  cudaRuntimeGetVersion(&version);
  propError = cudaGetDeviceProperties_v2(p, 0);
  bigError = cudaMalloc(&big, p->totalGlobalMem);
  cudaMalloc(&workspace, 1 << 20);
  int created = cublasCreate_v2(&blas);
  workspaceError = cublasSetWorkspace_v2(blas, workspace, 1 << 20);
  int ltCreated = cublasLtMatmulDescCreate(&lt, 68 /* CUBLAS_COMPUTE_32F */, 0 /* CUDA_R_32F */);
  printf("{\"version\": %d, \"propError\": %d, \"name\": \"%s\", \"totalGlobalMem\": %zu, \"major\": %d, \"minor\": %d, \"clockRate\": %d, \"sms\": %d, "
         "\"offsetOfMajor\": %zu, \"bigError\": %d, \"created\": %d, \"workspaceError\": %d, \"ltCreated\": %d, \"ltCudart\": %zu}\n",
         version, propError, p->name, p->totalGlobalMem, p->major, p->minor, p->clockRate, p->multiProcessorCount,
         offsetof(struct Prop12, major), bigError, created, workspaceError, ltCreated, cublasLtGetCudartVersion());
  cublasDestroy_v2(blas);
  cudaFree(workspace);
  return 0;
}
`;

describe("a program built for CUDA 12 runs on the CUDA 12 stubs", () => {
  it("cudaGetDeviceProperties_v2 fills CUDA 12's layout; memory runs out at the device's capacity; cuBLAS 12 makes a handle and cuBLASLt 12 a matmul descriptor", () => {
    const dir = mkdtempSync(join(tmpdir(), "vramfit-cuda12-"));
    writeFileSync(join(dir, "probe.c"), PROBE);
    const libs = ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"].map((l) => join(cuda12, l));
    const build = spawnSync("cc", ["-O1", "-o", join(dir, "probe"), join(dir, "probe.c"), "-Wl,--no-as-needed", ...libs, `-Wl,-rpath,${cuda12}`], { encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
    // The loader found each by soname: the program needs the CUDA 12 names, not the files' paths.
    expect(readElfDynamic(join(dir, "probe")).needed).toEqual(expect.arrayContaining(["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"]));
    const run = spawnSync(join(dir, "probe"), [], { env: { PATH: process.env.PATH ?? "", CUDASIM_DEVICES: "NVIDIA H100 80GB HBM3:85520809984:cc=9.0:sm=132" }, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout) as Record<string, number | string>;
    expect(r.offsetOfMajor).toBe(360);
    expect(Math.floor((r.version as number) / 1000)).toBe(12);
    expect(r).toMatchObject({ propError: 0, name: "NVIDIA H100 80GB HBM3", totalGlobalMem: 85520809984, major: 9, minor: 0, sms: 132, created: 0, workspaceError: 0, ltCreated: 0 });
    // CUDA 12's field that CUDA 13 dropped is written, not left as the 0xAB fill: 0, as cudaDevAttrClockRate answers
    // (clocks are not modelled: native/stubs/cudart/devices.cc). With CUDA 13's layout major/minor would read the fill.
    expect(r.clockRate).toBe(0);
    // The whole device cannot be taken: the context is charged inside it (cudaErrorMemoryAllocation, 2).
    expect(r.bigError).toBe(2);
    expect(Math.floor((r.ltCudart as number) / 1000)).toBe(12);
  });
});

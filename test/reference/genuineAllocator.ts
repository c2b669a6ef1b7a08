// PyTorch's genuine CUDA caching allocator as a reference: the torch wheel of VRAMFIT_TORCH_CUDA_PYTHON
// (its torch/include, libc10.so, libc10_cuda.so, where they lie), on vramfit's stub CUDA runtime
// (build/Release/stubs/cuda13), driven by genuine_allocator.cc. One process per allocator
// configuration replays any number of events logs.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const harnessSource = fileURLToPath(new URL("./genuine_allocator.cc", import.meta.url));
const stubDir = fileURLToPath(new URL("../../build/Release/stubs/cuda13/", import.meta.url));
const nvmlSim = fileURLToPath(new URL("../../build/Release/libnvmlsim.so", import.meta.url));

/** Where the harness is kept: $VRAMFIT_CACHE_DIR, else $XDG_CACHE_HOME/vramfit or ~/.cache/vramfit as CI's other caches. */
function cacheDir(): string {
  return process.env.VRAMFIT_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "vramfit");
}

/** The simulated device the harness runs on: 64 TiB of address space, so no trace meets its end unless asked. */
export const DEVICE_BYTES = 64 * 2 ** 40;

export interface GenuineReplay {
  fits: boolean;
  /** The event that ran out of memory (-1: none). */
  failedAt: number;
  /** The allocator's device allocations in order: + cudaMalloc (cuMemMap), - cudaFree (cuMemUnmap). */
  deviceCalls: number[];
  peakAllocatedBytes: number;
  peakReservedBytes: number;
  numAllocRetries: number;
  numOoms: number;
}

export interface TorchWheel {
  dir: string;
  version: string;
}

/** Where the skip reason is, when there is one: the wheel and the headers this needs. */
export function findTorchWheel(python: string | undefined): TorchWheel | string {
  if (!python) return "VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)";
  const run = spawnSync(python, ["-c", "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('torch').origin))"], { encoding: "utf8" });
  if (run.status !== 0) return `${python} has no torch: ${run.stderr.trim().split("\n").pop()}`;
  const dir = run.stdout.trim();
  // Set but not a CUDA build: the environment is broken, which must fail, not skip (buildHarness says so).
  const version = /__version__\s*=\s*'([^']+)'/.exec(readFileSync(join(dir, "version.py"), "utf8"))?.[1] ?? "unknown";
  return { dir, version };
}

/** The CUDA headers c10/cuda's headers include: the CI's nvidia-cuda-runtime wheel, else a toolkit's. */
export function findCudaInclude(): string | undefined {
  return [process.env.VRAMFIT_CUDA_INCLUDE, "/usr/local/cuda/include"].find(
    (dir) => dir !== undefined && dir !== "" && existsSync(join(dir, "cuda_runtime_api.h")) && existsSync(join(dir, "crt", "host_defines.h")),
  );
}

/**
 * The harness, compiled once per torch version and source (cached under cacheDir(): a
 * compile against c10's headers takes ~15 s). Linked against the stub by soname; the loader
 * finds the stub and the wheel's libraries through LD_LIBRARY_PATH when it runs.
 */
export function buildHarness(wheel: TorchWheel, cudaInclude: string): string {
  if (!existsSync(join(wheel.dir, "lib", "libc10_cuda.so"))) {
    throw new Error(`${wheel.dir} (torch ${wheel.version}) has no lib/libc10_cuda.so: VRAMFIT_TORCH_CUDA_PYTHON must hold torch 2.14.1's CUDA build`);
  }
  const source = readFileSync(harnessSource);
  const key = createHash("sha256").update(source).update(wheel.version).update(cudaInclude).digest("hex").slice(0, 16);
  const dir = join(cacheDir(), "genuine-allocator");
  const binary = join(dir, `genuine_allocator-${wheel.version}-${key}`);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}`;
  const args = ["-std=c++20", "-O2", "-w", harnessSource, "-o", partial, `-I${join(wheel.dir, "include")}`, `-I${cudaInclude}`,
    `-L${join(wheel.dir, "lib")}`, "-lc10", "-lc10_cuda", join(stubDir, "libcudart.so.13")];
  const build = spawnSync(process.env.CXX ?? "g++", args, { encoding: "utf8" });
  if (build.status !== 0) throw new Error(`compiling ${harnessSource} failed:\n${build.stderr}`);
  renameSync(partial, binary);  // atomic: a concurrent run never sees half a binary
  return binary;
}

/**
 * A folder holding the simulated NVML under the name PyTorch dlopens, libnvidia-ml.so.1: expandable
 * segments ask NVML for the device's fabric before their first map (c10/cuda/PeerToPeerAccess.cpp,
 * get_fabric_access), and without the library c10 calls a null function. Not in the stub folder
 * itself, where every simulated torch job would then find it (torch.cuda.device_count asks NVML first).
 */
function nvmlDir(): string {
  const dir = join(cacheDir(), "genuine-allocator", `nvml-${createHash("sha256").update(nvmlSim).digest("hex").slice(0, 16)}`);
  const link = join(dir, "libnvidia-ml.so.1");
  if (!existsSync(link)) {
    mkdirSync(dir, { recursive: true });
    const partial = `${link}.${process.pid}`;
    symlinkSync(nvmlSim, partial);
    renameSync(partial, link);  // atomic, as the harness binary
  }
  return dir;
}

/** How a harness process starts besides its configuration: the simulated device's total, and more environment (PYTORCH_ALLOC_CONF). */
export interface HarnessOptions {
  /** The device's total bytes (default DEVICE_BYTES): what per_process_memory_fraction is a fraction of. */
  deviceBytes?: number;
  env?: Record<string, string>;
}

/** One harness process under one PYTORCH_CUDA_ALLOC_CONF (unset: PyTorch's defaults). */
export class GenuineAllocator {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: ((line: string) => void)[] = [];
  private stderr = "";

  constructor(binary: string, wheel: TorchWheel, allocConf: string | undefined, options: HarnessOptions = {}) {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      LD_LIBRARY_PATH: [stubDir, nvmlDir(), join(wheel.dir, "lib")].join(":"),
      CUDASIM_DEVICES: `vramfit reference GPU:${options.deviceBytes ?? DEVICE_BYTES}`,
      CUDASIM_CONTEXT_BYTES: "0",  // vramfit's side charges no context either: the allocators alone are compared
      ...(allocConf !== undefined && { PYTORCH_CUDA_ALLOC_CONF: allocConf }),
      ...options.env,
    };
    this.child = spawn(binary, [], { env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    createInterface({ input: this.child.stdout }).on("line", (line) => this.waiting.shift()?.(line));
    this.child.on("exit", (code) => {
      for (const resolve of this.waiting.splice(0)) resolve(JSON.stringify({ exit: code, stderr: this.stderr }));
    });
  }

  /** Replays an events log at a capacity (0: the whole device). */
  replay(eventsLog: string, capacityBytes: number): Promise<GenuineReplay> {
    return new Promise((resolve, reject) => {
      this.waiting.push((line) => {
        const answer = JSON.parse(line) as GenuineReplay & { exit?: number; stderr?: string };
        if (answer.exit !== undefined) reject(new Error(`genuine_allocator exited (${answer.exit}): ${answer.stderr}`));
        else resolve(answer);
      });
      this.child.stdin.write(`replay ${capacityBytes}\n${eventsLog}end\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }
}

// A catalog GPU simulated for the user's own PyTorch job (`--exec … --gpu ID`): the stub CUDA
// libraries (native/stubs) preloaded under the job's torch, the device they present, the check that
// they provide every function that torch imports, and what each run's stubs report afterwards.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findGpu, type CatalogGpu } from "../devices/catalog.js";
import { multiprocessorsOf, type Multiprocessors } from "../devices/multiprocessors.js";
import { VramfitError } from "../errors.js";
import { readElfDynamic } from "./elfSymbols.js";
import { JobRunError } from "./runJob.js";

/** `findMaxBatchByRunning(command, { simulate })`: run the job on a simulated catalog GPU. */
export interface SimulateOptions {
  /** The catalog GPU to simulate (`H100-80GB`; `vramfit gpus` lists them). */
  gpu: string;
  /**
   * The Python whose torch the job runs (default `python3` on PATH): vramfit finds torch's
   * libraries through it, without importing torch, to check the stubs cover what they import.
   */
  python?: string;
  /**
   * What the stub cuDNN answers every convolution and execution-plan workspace query with (default
   * 0): real cuDNN's sizes depend on the engine it picks on the real GPU. As on every other path, the
   * budget's reserve covers cuDNN's per-call workspaces.
   */
  cudnnWorkspaceBytes?: number;
}

/** The simulated device and the torch that runs on it, resolved once per search. */
export interface SimulatedGpu {
  gpu: CatalogGpu;
  multiprocessors: Multiprocessors;
  torchVersion: string;
  torchLibDir: string;
  cudaMajor: number;
  /** The stub libraries' folder (libcudart, libcuda, libcublas, libcublasLt, libcudnn). */
  stubsDir: string;
  /** Charged by the stub runtime when the job's context opens: vramfit's job context. */
  contextBytes: number;
  cudnnWorkspaceBytes: number;
}

/** What the stubs saw during one run, read from the files they write at exit. */
export interface SimulatedRunReport {
  /** The device's peak as the stub runtime counted it (every cudaMalloc, the context included); null when no process used the device. */
  peakBytes: number | null;
  /** cudaMalloc calls the device refused (the job's allocator then frees its cache and retries, or raises out of memory). */
  failedMallocs: number;
  /** Bytes the job read back from the device (cudaMemcpy and friends, cuBLAS results on the host): they read as zeros. */
  deviceToHostBytes: number;
  /** What the job touched that is not simulated, as `library.what` → count (cudnn.workspaceQueries, cudnn.benchmark, driver.moduleLoads, …). */
  touched: Record<string, number>;
}

// The package root, from this file's place in dist/job/ (and the CLI bundle's in dist/cli/).
const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The sonames of the stub libraries, preloaded in this order (the driver first: the others may open it). */
function stubSonames(major: number): string[] {
  return ["libcuda.so.1", `libcudart.so.${major}`, `libcublasLt.so.${major}`, `libcublas.so.${major}`, "libcudnn.so.9"];
}

/**
 * Where the stubs for CUDA `major` are: VRAMFIT_STUBS_DIR's cuda<major> folder when set; else the
 * first that holds them of this build's (a source build) and the prebuild's (an installed package,
 * scripts/prebuild.mjs), in the order the addon is looked for (src/native/binding.ts); else the
 * build's, which the caller names in its error.
 */
export function stubsDirectory(major: number, env: NodeJS.ProcessEnv = process.env): string {
  if (env.VRAMFIT_STUBS_DIR !== undefined && env.VRAMFIT_STUBS_DIR !== "") return join(env.VRAMFIT_STUBS_DIR, `cuda${major}`);
  const candidates = [join(packageRoot, "build", "Release", "stubs"), join(packageRoot, "prebuilds", `${process.platform}-${process.arch}`, "stubs")].map((dir) => join(dir, `cuda${major}`));
  return candidates.find((dir) => existsSync(join(dir, `libcudart.so.${major}`))) ?? candidates[0]!;
}

interface TorchLocation {
  version: string;
  libDir: string;
}

/** torch's version and library folder, asked of `python` without importing torch (which needs a GPU's libraries to import). */
export function locateTorch(python: string): TorchLocation {
  const script =
    "import importlib.util, importlib.metadata, os, sys\n" +
    "spec = importlib.util.find_spec('torch')\n" +
    "if spec is None or spec.origin is None: sys.exit(3)\n" +
    "print(importlib.metadata.version('torch')); print(os.path.join(os.path.dirname(spec.origin), 'lib'))\n";
  const result = spawnSync(python, ["-c", script], { encoding: "utf8", timeout: 60_000 });
  if (result.error !== undefined) throw new VramfitError("ERR_INVALID_ARGUMENT", `--python: expected a Python that runs, got ${python} (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`);
  if (result.status === 3) throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `the simulated GPU runs the job's own PyTorch, and ${python} has none (--python names the job's Python)`);
  const [version, libDir] = result.stdout.trim().split("\n");
  if (result.status !== 0 || version === undefined || libDir === undefined) {
    throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `could not ask ${python} where torch is: ${result.stderr.trim().split("\n").pop() ?? `exit status ${result.status}`}`);
  }
  return { version, libDir };
}

/** The functions `torchLibDir`'s libraries import from the stubbed libraries that `stubsDir` lacks, as `library: name, name; …`. */
export function missingStubFunctions(torchLibDir: string, stubsDir: string, major: number): string[] {
  const provided = new Map<string, Set<string>>();
  for (const soname of stubSonames(major)) {
    const path = join(stubsDir, soname);
    provided.set(soname, new Set(existsSync(path) ? readElfDynamic(path).exports.map((s) => s.name) : []));
  }
  const missing = new Map<string, Set<string>>();
  const libraries = readdirSync(torchLibDir).filter((f) => /\.so(\.|$)/.test(f));
  for (const file of libraries) {
    const elf = readElfDynamic(join(torchLibDir, file));
    const needsDriver = elf.needed.includes("libcuda.so.1");
    for (const symbol of elf.imports) {
      // Versioned imports name their library; the driver's are unversioned (libcuda.so.1 versions none).
      const library = symbol.library ?? (needsDriver && /^cu[A-Z]/.test(symbol.name) && !/^cu(da|dnn|blas|fft|sparse|solver|rand|File)/.test(symbol.name) ? "libcuda.so.1" : null);
      const have = library === null ? undefined : provided.get(library);
      if (have === undefined || have.has(symbol.name)) continue;
      if (!missing.has(library!)) missing.set(library!, new Set());
      missing.get(library!)!.add(symbol.name);
    }
  }
  return [...missing].map(([library, names]) => `${library}: ${[...names].sort().join(", ")}`);
}

/** Resolves the GPU, the job's torch and the stubs, and checks the stubs cover torch's imports: throws (nothing runs) when they do not. */
export function prepareSimulatedGpu(options: SimulateOptions, contextBytes: number, env: NodeJS.ProcessEnv = process.env): SimulatedGpu {
  const gpu = findGpu(options.gpu);
  const multiprocessors = multiprocessorsOf(gpu);
  if (multiprocessors === undefined) throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `--gpu: ${gpu.id} has no SM count in vramfit's table (src/devices/multiprocessors.ts), so it cannot be simulated`);
  const torch = locateTorch(options.python ?? "python3");
  const cudaLibrary = join(torch.libDir, "libtorch_cuda.so");
  if (!existsSync(cudaLibrary)) throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `torch ${torch.version} (${torch.libDir}) is not a CUDA build: the simulated GPU needs one`);
  const runtime = readElfDynamic(cudaLibrary).needed.find((n) => /^libcudart\.so\.\d+$/.test(n));
  const cudaMajor = runtime === undefined ? NaN : Number(runtime.slice("libcudart.so.".length));
  if (cudaMajor !== 12 && cudaMajor !== 13) throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `torch ${torch.version} links ${runtime ?? "no CUDA runtime"}: vramfit simulates CUDA 12 and 13 builds`);
  const stubsDir = stubsDirectory(cudaMajor, env);
  if (!existsSync(join(stubsDir, `libcudart.so.${cudaMajor}`))) {
    throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `the simulated GPU's libraries are not built (${stubsDir}): run \`npm run build:native\``);
  }
  const missing = missingStubFunctions(torch.libDir, stubsDir, cudaMajor);
  if (missing.length > 0) {
    throw new VramfitError("ERR_SIMULATION_UNSUPPORTED", `torch ${torch.version} imports functions the simulated GPU's libraries lack, so nothing ran: ${missing.join("; ")}`);
  }
  return { gpu, multiprocessors, torchVersion: torch.version, torchLibDir: torch.libDir, cudaMajor, stubsDir, contextBytes, cudnnWorkspaceBytes: options.cudnnWorkspaceBytes ?? 0 };
}

/** The environment a run gets on top of the job's: the stubs preloaded, the device described, the reports' files. */
export function simulatedRunEnv(sim: SimulatedGpu, reportPrefix: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const [major, minor] = sim.gpu.computeCapability.split(".");
  const preload = stubSonames(sim.cudaMajor).map((soname) => join(sim.stubsDir, soname));
  const joined = (name: string, first: string, separator: string) => (env[name] ? `${first}${separator}${env[name]}` : first);
  return {
    LD_PRELOAD: joined("LD_PRELOAD", preload.join(" "), " "),
    LD_LIBRARY_PATH: joined("LD_LIBRARY_PATH", sim.stubsDir, ":"),
    CUDASIM_DEVICES: `${sim.gpu.name}:${sim.gpu.totalBytes}:cc=${major}.${minor}:sm=${sim.multiprocessors.count}:l2=${sim.multiprocessors.l2CacheBytes}${sim.gpu.integrated ? ":integrated=1" : ""}`,
    CUDASIM_CONTEXT_BYTES: String(sim.contextBytes),
    VRAMFIT_STUB_COUNTERS: `${reportPrefix}.counters.%p`,
    VRAMFIT_STUB_TOUCHED: `${reportPrefix}.touched`,
    VRAMFIT_STUB_CUDNN_WORKSPACE: String(sim.cudnnWorkspaceBytes),
  };
}

function keyValues(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^([A-Za-z0-9_.]+)=([0-9]+)$/.exec(line.trim());
    if (match) values.set(match[1]!, (values.get(match[1]!) ?? 0) + Number(match[2]));
  }
  return values;
}

/** What the stubs of every process of one run wrote (`reportPrefix` as given to simulatedRunEnv). */
export function readSimulatedRun(reportPrefix: string): SimulatedRunReport {
  const dir = dirname(reportPrefix);
  const stem = reportPrefix.slice(dir.length + 1);
  let peakBytes: number | null = null;
  let deviceToHostBytes = 0;
  let failedMallocs = 0;
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${stem}.counters.`))) {
    const counters = keyValues(readFileSync(join(dir, file), "utf8"));
    const mallocs = counters.get("mallocCalls") ?? 0;
    const peak = counters.get("VRAMFIT_PEAK_BYTES") ?? 0;
    // Every process of the job loads the stubs (the shell too): those that never used the device report 0.
    if (peak > 0 || mallocs > 0) peakBytes = Math.max(peakBytes ?? 0, peak);
    deviceToHostBytes += counters.get("deviceToHostBytes") ?? 0;
    failedMallocs += counters.get("failedMallocs") ?? 0;
  }
  const touchedPath = `${reportPrefix}.touched`;
  const touched: Record<string, number> = {};
  if (existsSync(touchedPath)) for (const [what, count] of keyValues(readFileSync(touchedPath, "utf8"))) touched[what] = count;
  deviceToHostBytes += touched["cublas.deviceToHostBytes"] ?? 0;
  delete touched["cublas.deviceToHostBytes"];
  return { peakBytes, failedMallocs, deviceToHostBytes, touched };
}

// What libstdc++ prints when a thread is ended inside a noexcept function: torch 2.14.1's autograd device thread,
// released at the interpreter's exit while it drops a backward pass's last graph task (docs/exec.md, "A job can
// abort at its exit"; test/job/autogradExitRace.test.ts).
const EXIT_RACE_LINE = "terminate called without an active exception";

/**
 * A simulated run that aborted (SIGABRT, or a shell's 134) after libstdc++'s line for that: the message adds that it
 * is likely torch's exit race, which the simulated GPU's instant kernels make likelier, and not the batch. Any
 * other error comes back as it is. Nothing is rerun: the caller decides.
 */
export function withExitRaceHint(error: unknown): unknown {
  if (!(error instanceof JobRunError) || error.code !== "ERR_JOB_FAILED") return error;
  const aborted = error.run.exitCode === 134 || error.run.signal === "SIGABRT";
  if (!aborted || !error.message.includes(EXIT_RACE_LINE)) return error;
  const hint = `(on the simulated GPU this is likely torch's autograd exit race after a backward pass, not the batch: docs/exec.md, "A job can abort at its exit"; running again may answer)`;
  return new JobRunError("ERR_JOB_FAILED", `${error.message}\n${hint}`, error.run);
}

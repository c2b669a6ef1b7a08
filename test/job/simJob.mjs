// The simulated training job (test/job/sim-job.c) for tests and scripts/bench.mjs: builds it, turns
// a job description into its SIMJOB_* environment, and says which batches it fits, by the same
// arithmetic as the simulated driver (each allocation rounded up to the granularity, the context
// charged once per device), so a test knows the true answer without running anything.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const source = resolve(root, "test", "job", "sim-job.c");
export const simJobPath = resolve(root, "build", "test-job", "sim-job");

/**
 * Compiles sim-job.c with the system C compiler (the one that builds the addon), unless the binary
 * is newer than the source. Compiles to a private name and renames, so test files building it at
 * once each see a whole binary.
 */
export function buildSimJob() {
  if (existsSync(simJobPath) && statSync(simJobPath).mtimeMs >= statSync(source).mtimeMs) return simJobPath;
  mkdirSync(dirname(simJobPath), { recursive: true });
  const temporary = `${simJobPath}.${process.pid}`;
  const compiler = process.env.CC ?? "cc";
  execFileSync(compiler, ["-std=c11", "-D_GNU_SOURCE", "-O1", "-o", temporary, source, "-ldl"], { stdio: "inherit" });
  renameSync(temporary, simJobPath);
  return simJobPath;
}

/** u(batch) of sim-job.c's noiseBytes(): the same 32-bit hash. */
export function noiseBytes(batch, noise, seed = 0) {
  let h = (seed ^ Math.imul(batch, 0x9e3779b1)) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return (h % 1025) * Math.floor(noise / 1024);
}

/** The sizes sim-job.c allocates at `batch`, in order (zero-byte tensors are not allocated). */
export function jobSizes(job, batch) {
  const parts = job.parts ?? 1;
  const activations = job.perSampleBytes * batch;
  const sizes = [];
  if ((job.fixedBytes ?? 0) > 0) sizes.push(job.fixedBytes);
  for (let i = 0; i < (job.smallCount ?? 0); i += 1) sizes.push(job.smallBytes);
  for (let i = 0; i < parts; i += 1) sizes.push(Math.floor(activations / parts) + (i + 1 === parts ? activations % parts : 0));
  sizes.push(noiseBytes(batch, job.noiseBytes ?? 0, job.seed ?? 0));
  return sizes.filter((size) => size > 0);
}

/** What the job prints as VRAMFIT_PEAK_BYTES at `batch`: the bytes it requested. */
export function requestedBytes(job, batch) {
  return jobSizes(job, batch).reduce((sum, size) => sum + size, 0);
}

/**
 * Device bytes the job takes at `batch` on the simulated driver, as native/sim/sim_driver.cc
 * charges them: its context, each allocation above `smallAllocMaxBytes` rounded up to whole pages,
 * and smaller ones (rounded to the alignment) packed first-fit into shared pages, each page counted
 * whole. The defaults are the simulator's, but for the context (tests name it).
 */
export function deviceBytes(job, batch, { granularityBytes = 2 * 2 ** 20, contextBytes = 0, smallAllocMaxBytes = 2 ** 20, allocAlignmentBytes = 512 } = {}) {
  const pages = [];
  let total = contextBytes;
  for (const size of jobSizes(job, batch)) {
    if (size <= smallAllocMaxBytes && size < granularityBytes) {
      const share = Math.ceil(size / allocAlignmentBytes) * allocAlignmentBytes;
      const page = pages.findIndex((used) => used + share <= granularityBytes);
      if (page >= 0) pages[page] += share;
      else {
        pages.push(share);
        total += granularityBytes;
      }
    } else {
      total += Math.ceil(size / granularityBytes) * granularityBytes;
    }
  }
  return total;
}

/** The true answer: the largest batch whose bytes fit in `freeBytes` (0 when batch 1 does not). */
export function trueMaxBatch(job, freeBytes, simulator = {}) {
  if (deviceBytes(job, 1, simulator) > freeBytes) return 0;
  // Bytes grow with the batch (noise is kept below one sample's bytes): gallop, then bisect.
  let low = 1;
  let high = 2;
  while (deviceBytes(job, high, simulator) <= freeBytes) [low, high] = [high, high * 2];
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (deviceBytes(job, middle, simulator) <= freeBytes) low = middle;
    else high = middle;
  }
  return low;
}

/** The SIMJOB_* environment of a job description. */
export function jobEnv(job) {
  const env = {
    SIMJOB_FIXED: String(job.fixedBytes ?? 0),
    SIMJOB_PER_SAMPLE: String(job.perSampleBytes),
    SIMJOB_PARTS: String(job.parts ?? 1),
    SIMJOB_HOLD_MS: String(job.holdMs ?? 20),
  };
  if ((job.smallCount ?? 0) > 0) env.SIMJOB_SMALL = `${job.smallCount}@${job.smallBytes}`;
  if ((job.noiseBytes ?? 0) > 0) Object.assign(env, { SIMJOB_NOISE: String(job.noiseBytes), SIMJOB_SEED: String(job.seed ?? 0) });
  if (job.printPeak) env.SIMJOB_PRINT_PEAK = job.printPeak === "device" ? "device" : "1";
  if (job.oom !== undefined) env.SIMJOB_OOM = job.oom;
  return env;
}

/** The pids sim-job wrote to SIMJOB_PID_FILE (the job's, then its worker's), none when it wrote none yet. */
export function jobPids(file) {
  return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map(Number) : [];
}

/** Whether a process still runs (a zombie waiting for its parent to reap it does not). */
export function processAlive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

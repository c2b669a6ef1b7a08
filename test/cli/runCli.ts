// Spawns the built CLI (bin/vramfit.js → dist/) the way a job script would, with a chosen driver.
import { spawn, type ChildProcessByStdio, type SpawnOptions } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";

export const root = resolve(import.meta.dirname, "..", "..");
export const simulator = resolve(root, "build", "Release", "libcudasim.so");
export const nvmlSimulator = resolve(root, "build", "Release", "libnvmlsim.so");
/**
 * Each test file is its own machine, but simulated GPUs of the same name and position have the
 * same UUID: a lock directory per file keeps files running in parallel from waiting on each
 * other's device locks.
 */
export const lockDir = mkdtempSync(join(tmpdir(), "vramfit-locks-"));

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a machine with these simulated GPUs (`name:total[:used]`, `;`-separated).
 * CUDASIM_CONTEXT_BYTES=0 keeps the figures these tests were written with: the simulator's
 * default context (256 MiB, docs/simulator.md) is charged by the CLI's device path only once it
 * counts vramfit's own context (issue 11, the one context model); remove it then. A test may set it.
 */
export function simulatedGpus(devices: string, extra: Record<string, string> = {}): Record<string, string> {
  return { VRAMFIT_CUDA_LIBRARY: simulator, CUDASIM_DEVICES: devices, VRAMFIT_LOCK_DIR: lockDir, CUDASIM_CONTEXT_BYTES: "0", ...extra };
}

/** A machine with no driver at all. */
export const NO_DRIVER = { VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" };

/** A spawned process and the promise of its collected output, settled at exit. */
export interface Spawned {
  child: ChildProcessByStdio<null, Readable, Readable>;
  finished: Promise<CliRun & { signal: NodeJS.Signals | null }>;
}

/** Spawns a command with stdout and stderr collected: the one place tests start processes. */
export function spawnCollected(command: string, args: readonly string[], options: SpawnOptions = {}): Spawned {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  const finished = new Promise<CliRun & { signal: NodeJS.Signals | null }>((done, fail) => {
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", fail);
    child.on("close", (status, signal) => done({ status, stdout, stderr, signal }));
  });
  return { child, finished };
}

/** Starts the CLI and leaves it running (to signal it, or to run several at once); `finished` settles at exit. */
export function startCli(args: readonly string[], env: Record<string, string> = NO_DRIVER): Spawned {
  return spawnCollected(process.execPath, [resolve(root, "bin", "vramfit.js"), ...args], { env: { PATH: process.env.PATH ?? "", ...env } });
}

export function runCli(args: readonly string[], env: Record<string, string> = NO_DRIVER): Promise<CliRun> {
  return startCli(args, env).finished;
}

export async function runJson<T = Record<string, unknown>>(args: readonly string[], env?: Record<string, string>): Promise<CliRun & { json: T }> {
  const run = await runCli([...args, "--json"], env);
  let json: T;
  try {
    json = JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (status ${run.status}):\n${run.stdout}\n${run.stderr}`);
  }
  return { ...run, json };
}

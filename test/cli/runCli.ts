// Spawns the built CLI (bin/vramfit.js → dist/) the way a job script would, with a chosen driver.
import { spawn } from "node:child_process";
import { resolve } from "node:path";

export const root = resolve(import.meta.dirname, "..", "..");
export const simulator = resolve(root, "build", "Release", "libcudasim.so");

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a machine with these simulated GPUs (`name:total[:used]`, `;`-separated). */
export function simulatedGpus(devices: string, extra: Record<string, string> = {}): Record<string, string> {
  return { VRAMFIT_CUDA_LIBRARY: simulator, CUDASIM_DEVICES: devices, ...extra };
}

/** A machine with no driver at all. */
export const NO_DRIVER = { VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" };

export function runCli(args: readonly string[], env: Record<string, string> = NO_DRIVER): Promise<CliRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [resolve(root, "bin", "vramfit.js"), ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", fail);
    child.on("close", (status) => done({ status, stdout, stderr }));
  });
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

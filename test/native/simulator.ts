// Shared setup for the native tests: the raw addon, pointed at the simulated CUDA driver.
//
// The simulator reads CUDASIM_DEVICES (and the other CUDASIM_* settings) once, at cuInit, and a
// process loads one driver; vitest runs each test file in its own process, so each file picks
// one machine with startSimulator() and keeps it.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

import { VramfitError } from "../../src/errors.js";
import type { Addon, DriverInfo } from "../../src/native/addonTypes.js";

const buildDir = fileURLToPath(new URL("../../build/Release/", import.meta.url));
export const addonPath = `${buildDir}vramfit.node`;
export const simulatorPath = `${buildDir}libcudasim.so`;
/** The simulated NVML: same machine and ledger as the simulated driver. */
export const nvmlSimulatorPath = `${buildDir}libnvmlsim.so`;
/** An older NVML: no nvmlDeviceGetMemoryInfo_v2, only the v1 process query, no MIG functions. */
export const legacyNvmlSimulatorPath = `${buildDir}libnvmlsim_legacy.so`;
/** An older driver: no cuDeviceGetUuid_v2. */
export const legacySimulatorPath = `${buildDir}libcudasim_legacy.so`;

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;
/** What a primary context costs when CUDASIM_CONTEXT_BYTES is not set (docs/simulator.md says why). */
export const DEFAULT_CONTEXT_BYTES = 256 * MiB;

export interface SimulatedDevice {
  name: string;
  totalBytes: number;
  usedBytes?: number;
  /**
   * Optional `key=value` fields: `cc=8.7`, `sm=16`, `integrated=1`, `reserved=BYTES`, `bus=3B`,
   * `delay=MS`, `proc=PID@BYTES`, `mig=BYTES+BYTES`, `hidden=BYTES` (free to cuMemGetInfo, never granted).
   */
  extras?: string[];
}

export interface SimulatorConfig {
  devices: SimulatedDevice[];
  granularityBytes?: number;
  driverVersion?: number;
  /** How long the simulated cuCtxSynchronize takes, to make touch probes observable. */
  syncDelayMs?: number;
  /** Latency of every call that reaches a device. */
  callDelayMs?: number;
  /** Device memory a primary context takes; unset: the simulator's default, DEFAULT_CONTEXT_BYTES. */
  contextBytes?: number;
  /** A ledger file shared with other processes. */
  stateFile?: string;
}

/** CUDASIM_DEVICES for these devices. */
export function devicesText(devices: readonly SimulatedDevice[]): string {
  return devices
    .map((device) => [device.name, device.totalBytes, device.usedBytes ?? 0, ...(device.extras ?? [])].join(":"))
    .join(";");
}

let addon: Addon | undefined;

/** The raw addon, with VramfitError handed to it; the driver is not loaded yet. */
export function loadAddon(): Addon {
  if (addon === undefined) {
    if (!existsSync(addonPath) || !existsSync(simulatorPath)) {
      const missing = [addonPath, simulatorPath].filter((path) => !existsSync(path)).join(", ");
      throw new Error(`build the native code first (npm run build:native): missing ${missing}`);
    }
    addon = createRequire(import.meta.url)(addonPath) as Addon;
    addon.setErrorClass(VramfitError);
  }
  return addon;
}

/** Writes the CUDASIM_* variables; the simulator reads them at the next successful cuInit. */
export function configureSimulator(config: SimulatorConfig): void {
  process.env.CUDASIM_DEVICES = devicesText(config.devices);
  setOrDelete("CUDASIM_GRANULARITY", config.granularityBytes);
  setOrDelete("CUDASIM_DRIVER_VERSION", config.driverVersion);
  setOrDelete("CUDASIM_SYNC_DELAY_MS", config.syncDelayMs);
  setOrDelete("CUDASIM_CALL_DELAY_MS", config.callDelayMs);
  setOrDelete("CUDASIM_CONTEXT_BYTES", config.contextBytes);
  if (config.stateFile === undefined) delete process.env.CUDASIM_STATE;
  else process.env.CUDASIM_STATE = config.stateFile;
  delete process.env.CUDASIM_FAIL;
}

/** Configures the simulated machine and loads the driver against it. */
export async function startSimulator(config: SimulatorConfig): Promise<{ addon: Addon; info: DriverInfo }> {
  const loaded = loadAddon();
  configureSimulator(config);
  return { addon: loaded, info: await loaded.loadDriver(simulatorPath) };
}

/**
 * Runs `body` with CUDASIM_FAIL set to `rules`, and clears it afterwards. Set only while no driver
 * call is in flight: the simulator's getenv would race with setenv.
 */
export async function withFault<T>(rules: string, body: () => Promise<T>): Promise<T> {
  process.env.CUDASIM_FAIL = rules;
  try {
    return await body();
  } finally {
    delete process.env.CUDASIM_FAIL;
  }
}

/** Awaits a promise that must reject with VramfitError, and returns the error. */
export async function rejection(promise: Promise<unknown>): Promise<VramfitError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(VramfitError);
  return error as VramfitError;
}

/** Loads the simulated NVML into the addon (once per process), after startSimulator. */
export async function startNvml(path = nvmlSimulatorPath) {
  return loadAddon().loadNvml(path);
}

/** A fresh path in the system's temporary directory (for CUDASIM_STATE, CUDASIM_TRACE, lock dirs). */
export function temporaryPath(name: string): string {
  return `${mkdtempSync(join(tmpdir(), "vramfit-test-"))}/${name}`;
}

/**
 * Runs `body` — the body of an async function with `addon` in scope, the driver loaded — in a new
 * Node process on the simulated machine that `env` (CUDASIM_* variables) describes, and returns
 * what it returns. For machines other than the test file's own: a process loads one driver.
 */
export function inAnotherProcess<T>(env: Record<string, string>, body: string): T {
  const script = `
    const addon = require(${JSON.stringify(addonPath)});
    (async () => {
      await addon.loadDriver(${JSON.stringify(simulatorPath)});
      const result = await (async () => { ${body} })();
      process.stdout.write(JSON.stringify(result));
    })().catch((error) => { process.stderr.write(String(error && error.stack)); process.exit(1); });
  `;
  const child = spawnSync(process.execPath, ["-e", script], { env: { PATH: process.env.PATH ?? "", ...env }, encoding: "utf8" });
  if (child.status !== 0) throw new Error(`the other process failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as T;
}

/**
 * Starts a Node process on the simulated machine `env` (share a ledger with CUDASIM_STATE) that
 * runs `body` (with `addon` in scope, the driver loaded) without waiting for it: it holds whatever
 * `body` holds while `body` is pending. Its exit code is 0 when `body` resolved.
 */
export function startAnotherProcess(env: Record<string, string>, body: string): ChildProcess {
  const script = `
    const addon = require(${JSON.stringify(addonPath)});
    (async () => {
      await addon.loadDriver(${JSON.stringify(simulatorPath)});
      ${body}
    })().catch((error) => { process.stderr.write(String(error && error.stack)); process.exit(1); });
  `;
  return spawn(process.execPath, ["-e", script], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["pipe", "pipe", "inherit"] });
}

/**
 * Waits until `path` exists: a CUDASIM_PAUSE point reached (PATH.paused). Polls; no timing is
 * assumed beyond a generous limit that turns a hang into a failure.
 */
export async function waitForFile(path: string, limitMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!existsSync(path)) {
    if (Date.now() - started > limitMs) throw new Error(`${path} did not appear within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function setOrDelete(name: string, value: number | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = String(value);
}

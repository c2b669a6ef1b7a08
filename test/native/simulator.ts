// Shared setup for the native tests: the raw addon, pointed at the simulated CUDA driver.
//
// The simulator reads CUDASIM_DEVICES (and the other CUDASIM_* settings) once, at cuInit, and a
// process loads one driver; vitest runs each test file in its own process, so each file picks
// one machine with startSimulator() and keeps it.
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

export interface SimulatedDevice {
  name: string;
  totalBytes: number;
  usedBytes?: number;
  /**
   * Optional `key=value` fields: `cc=8.7`, `sm=16`, `integrated=1`, `reserved=BYTES`, `bus=3B`,
   * `delay=MS`, `proc=PID@BYTES`, `mig=BYTES+BYTES`.
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
  /** Device memory a primary context takes. */
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

function setOrDelete(name: string, value: number | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = String(value);
}

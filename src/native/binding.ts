// The only door to the native addon: finds it, loads the CUDA driver, remembers why either failed.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { VramfitError } from "../errors.js";
import type { Addon, DriverInfo } from "./addonTypes.js";

/** The CUDA backend, or none with the reason (shown by `vramfit info` and analytic answers). */
export type Backend =
  | { kind: "cuda"; addon: Addon; driver: DriverInfo }
  | { kind: "none"; reason: string; code: string };

export interface BackendOptions {
  /** An explicit path to `vramfit.node` (the escape hatch for bundlers and tests). */
  addonPath?: string;
  /** The driver library to dlopen; default `VRAMFIT_CUDA_LIBRARY`, else `libcuda.so.1`. */
  cudaLibrary?: string;
}

/** The package root: this file lives in src/native or dist/native. */
const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where the addon can be, in the order they are tried. */
export function addonCandidates(explicitPath?: string): string[] {
  const candidates = [
    join(packageRoot, "build", "Release", "vramfit.node"),
    join(packageRoot, "prebuilds", `${process.platform}-${process.arch}`, "vramfit.node"),
  ];
  const fromEnv = explicitPath ?? process.env.VRAMFIT_ADDON_PATH;
  return fromEnv ? [resolve(fromEnv), ...candidates] : candidates;
}

function loadAddon(explicitPath?: string): Addon | { reason: string } {
  const require = createRequire(import.meta.url);
  const tried: string[] = [];
  for (const path of addonCandidates(explicitPath)) {
    if (!existsSync(path)) {
      tried.push(`${path} (not found)`);
      continue;
    }
    try {
      const addon = require(path) as Addon;
      addon.setErrorClass(VramfitError);
      return addon;
    } catch (error) {
      tried.push(`${path} (${(error as Error).message.split("\n")[0]})`);
    }
  }
  return {
    reason: `native addon not found: tried ${tried.join("; ")}; run \`npm run build\` to build it`,
  };
}

let backend: Promise<Backend> | undefined;

/**
 * Loads the addon and the CUDA driver once per process. Never throws: when either is missing
 * the backend is `none`, with the reason, and vramfit answers analytically.
 */
export function openBackend(options: BackendOptions = {}): Promise<Backend> {
  backend ??= (async (): Promise<Backend> => {
    const addon = loadAddon(options.addonPath);
    if ("reason" in addon) return { kind: "none", reason: addon.reason, code: "ERR_ADDON_NOT_FOUND" };
    const library = options.cudaLibrary ?? process.env.VRAMFIT_CUDA_LIBRARY ?? "libcuda.so.1";
    try {
      return { kind: "cuda", addon, driver: await addon.loadDriver(library) };
    } catch (error) {
      if (!(error instanceof VramfitError)) throw error;
      return { kind: "none", reason: error.message, code: error.code };
    }
  })();
  return backend;
}

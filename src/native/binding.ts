// The only door to the native addon: finds it, loads the CUDA driver, remembers why either failed.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { VramfitError } from "../errors.js";
import type { Addon, DriverInfo, NvmlInfo } from "./addonTypes.js";
import { explainLoadFailure } from "./prebuildCompatibility.js";
import { envSetting } from "../environment.js";

/** No library, and why: what both loaders return instead of throwing. */
type Unavailable = { kind: "none"; reason: string; code: string };

/** The CUDA backend, or none with the reason (shown by `vramfit info` and analytic answers). */
export type Backend = { kind: "cuda"; addon: Addon; driver: DriverInfo } | { kind: "none"; reason: string; code: string };

/** NVML, or none with the reason (vramfit then reads memory through CUDA, creating a context). */
export type NvmlBackend = { kind: "nvml"; addon: Addon; info: NvmlInfo } | { kind: "none"; reason: string; code: string };

export interface BackendOptions {
  /** An explicit path to `vramfit.node` (the escape hatch for bundlers and tests). */
  addonPath?: string;
  /** The driver library to dlopen; default `VRAMFIT_CUDA_LIBRARY`, else `libcuda.so.1`. */
  cudaLibrary?: string;
  /** NVML to dlopen; default `VRAMFIT_NVML_LIBRARY`, else `libnvidia-ml.so.1`. */
  nvmlLibrary?: string;
}

/** The package root: this file lives in src/native or dist/native. */
const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where the addon can be, in the order they are tried. */
export function addonCandidates(explicitPath?: string): string[] {
  const candidates = [
    join(packageRoot, "build", "Release", "vramfit.node"),
    join(packageRoot, "prebuilds", `${process.platform}-${process.arch}`, "vramfit.node"),
  ];
  const fromEnv = explicitPath ?? envSetting("VRAMFIT_ADDON_PATH");
  return fromEnv ? [resolve(fromEnv), ...candidates] : candidates;
}

/**
 * Loads a native addon, once per Node environment (the addon registers itself once per
 * environment). Only a `.node` file: one that lacks the addon's entry points is not vramfit's.
 */
function loadNative(path: string): Addon {
  if (!path.endsWith(".node")) throw new Error("a Node addon's file name ends in .node");
  const addon = openNative(path) as Partial<Addon>;
  if (typeof addon.setErrorClass !== "function") throw new Error("a Node addon, but not vramfit's");
  addon.setErrorClass(VramfitError);
  return addon as Addon;
}

/**
 * The addon's exports as `require(path)` gives them, without require's resolution: for an absolute
 * path to a `.node` file require stats it, walks up for a package.json (its "self" lookup) and
 * makes a module for it before the same process.dlopen: in a fresh process 1.8-2.2 ms against
 * 1.0-1.4 ms for this function's way, 0.4 of it the dlopen (docs/benchmarks.md, seventh round),
 * in every run that loads the addon. One instance per environment as with require: require's
 * cache (keyed, as require keys it, by the real path) is read first, where another caller (a
 * test's helper, the user's own code) may have required the addon, and what is loaded here is put
 * there, so that a later require of it gets this instance, not a second one.
 */
function openNative(path: string): unknown {
  const cache = createRequire(import.meta.url).cache;
  const key = realpathSync.native(path);
  const known = cache[key];
  if (known !== undefined) return known.exports;
  const module = { exports: {} };
  process.dlopen(module, path);
  // What require's cache reads of an entry (Module._load): its exports, that it has loaded, its children.
  cache[key] = { id: key, filename: key, loaded: true, exports: module.exports, children: [], paths: [] } as unknown as NodeJS.Module;
  return module.exports;
}

/** The first line of a load failure, with why where the machine is the cause (another arch, musl, an older glibc). */
function loadFailure(path: string, error: unknown): string {
  const message = (error as Error).message.split("\n")[0]!;
  const why = explainLoadFailure(path, message);
  return `${message}${why ? `: ${why}` : ""}`;
}

function loadAddon(explicitPath?: string): Addon | { reason: string } {
  // An addon the user named (VRAMFIT_ADDON_PATH, addonPath) is the one to use: when it cannot be,
  // that is the reason, in one line, rather than a silent fall back to the package's own.
  const named = explicitPath ?? envSetting("VRAMFIT_ADDON_PATH");
  if (named !== undefined && named !== "") {
    const path = resolve(named);
    const source = explicitPath !== undefined ? "addonPath" : "VRAMFIT_ADDON_PATH";
    if (!existsSync(path)) return { reason: `native addon not found: ${source} names ${path}, which does not exist` };
    try {
      return loadNative(path);
    } catch (error) {
      return { reason: `native addon does not load: ${source} names ${path}, which is not a vramfit.node (${loadFailure(path, error)})` };
    }
  }
  const tried: string[] = [];
  let present = false;
  for (const path of addonCandidates()) {
    if (!existsSync(path)) {
      tried.push(`${path} (not found)`);
      continue;
    }
    present = true;
    try {
      return loadNative(path);
    } catch (error) {
      tried.push(`${path} (${loadFailure(path, error)})`);
    }
  }
  return { reason: `native addon ${present ? "does not load" : "not found"}: tried ${tried.join("; ")}; ${howToGetAddon()}` };
}

/**
 * How to get an addon here: what the install hook (scripts/install.mjs) found and its fix, kept in
 * build/vramfit-install.json; or, in a source checkout, the build command.
 */
function howToGetAddon(): string {
  try {
    const record = JSON.parse(readFileSync(join(packageRoot, "build", "vramfit-install.json"), "utf8")) as { build?: string; fix?: string };
    if (record.build && record.fix) return `building it from source at install failed (${record.build}); ${record.fix}`;
  } catch {
    // no record: installed with --ignore-scripts, or a checkout
  }
  if (existsSync(join(packageRoot, "src", "index.ts"))) return "run `npm run build:native` to build it";
  return "run `npm rebuild vramfit` to build it from source (it says what is missing)";
}

let addonOnce: ReturnType<typeof loadAddon> | undefined;
let backend: Promise<Backend> | undefined;
let nvml: Promise<NvmlBackend> | undefined;

/**
 * Loads the addon, then one driver library through it. A missing addon or a VramfitError from the
 * library's loader becomes `none` with the reason; anything else is a bug and is thrown.
 */
async function openThroughAddon<T>(options: BackendOptions, load: (addon: Addon) => Promise<T>): Promise<T | Unavailable> {
  const addon = (addonOnce ??= loadAddon(options.addonPath));
  if ("reason" in addon) return { kind: "none", reason: addon.reason, code: "ERR_ADDON_NOT_FOUND" };
  try {
    return await load(addon);
  } catch (error) {
    if (!(error instanceof VramfitError)) throw error;
    return { kind: "none", reason: error.message, code: error.code };
  }
}

/**
 * Loads the addon and the CUDA driver once per process. Never throws: when either is missing
 * the backend is `none`, with the reason, and vramfit answers analytically.
 */
export function openBackend(options: BackendOptions = {}): Promise<Backend> {
  const library = options.cudaLibrary ?? envSetting("VRAMFIT_CUDA_LIBRARY") ?? "libcuda.so.1";
  backend ??= openThroughAddon(options, async (addon) => ({ kind: "cuda" as const, addon, driver: await addon.loadDriver(library) })).then(withVisibleDevices);
  return backend;
}

/**
 * A driver that sees no device because CUDA_VISIBLE_DEVICES hides them all says only "no
 * CUDA-capable device"; the reason names the variable, which is what the user has to change.
 */
function withVisibleDevices(backend: Backend): Backend {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (backend.kind !== "none" || backend.code !== "ERR_NO_DEVICE" || visible === undefined) return backend;
  const why = visible.trim() === "" ? "CUDA_VISIBLE_DEVICES is set and empty, which hides every GPU" : `CUDA_VISIBLE_DEVICES=${JSON.stringify(visible)} names no GPU the driver has`;
  return { ...backend, reason: `${backend.reason}; ${why}` };
}

/**
 * Loads NVML once per process, on first use (nvmlInit can take a while on a many-GPU machine, so
 * only the commands that want it pay). Never throws: without it vramfit reads memory through CUDA.
 */
export function openNvml(options: BackendOptions = {}): Promise<NvmlBackend> {
  const library = options.nvmlLibrary ?? envSetting("VRAMFIT_NVML_LIBRARY") ?? "libnvidia-ml.so.1";
  nvml ??= openThroughAddon(options, async (addon) => ({ kind: "nvml" as const, addon, info: await addon.loadNvml(library) }));
  return nvml;
}

/** A native replay (the addon's replayInto or replayExpandableInto: replay_step.cc's io in and out). */
export type NativeReplay = NonNullable<Addon["replayInto"]>;

/**
 * The addon's native step replay, loading the addon if need be (no driver: it is pure); undefined
 * where the addon does not load, is too old to have it, or VRAMFIT_NATIVE_REPLAY=0 at the first call (the
 * TypeScript replay then answers: the same figures, slower in a fresh process).
 */
export function nativeReplay(): NativeReplay | undefined {
  if (replays === undefined) replays = findReplays();
  return replays.step;
}

/** The same for the replay through expandable segments (replayExpandableInto). */
export function nativeExpandableReplay(): NativeReplay | undefined {
  if (replays === undefined) replays = findReplays();
  return replays.expandable;
}

function findReplays(): { step?: NativeReplay; expandable?: NativeReplay } {
  if (process.env.VRAMFIT_NATIVE_REPLAY === "0") return {};
  const addon = (addonOnce ??= loadAddon());
  if ("reason" in addon) return {};
  return {
    ...(typeof addon.replayInto === "function" && { step: addon.replayInto.bind(addon) }),
    ...(typeof addon.replayExpandableInto === "function" && { expandable: addon.replayExpandableInto.bind(addon) }),
  };
}
/** The native replays, found once per process, VRAMFIT_NATIVE_REPLAY read then (reading the environment on each replay cost a few µs, more on the first). */
let replays: { step?: NativeReplay; expandable?: NativeReplay } | undefined;

/**
 * The backend if this process has opened it, without opening it: what releasing contexts needs
 * (nothing to release when the driver was never loaded, and no reason to load it then).
 */
export function openedBackend(): Promise<Backend> | undefined {
  return backend;
}

#!/usr/bin/env node
// Builds the native addon from source: cmake-js, then node-gyp where CMake is missing; never downloads.
//   node scripts/build-native.mjs [--out DIR] [--target NAME] [--static-runtime] [--cmake-only]
// Used by `npm run build:native` (a checkout), `npm run build:prebuild` and the install hook
// (scripts/install.mjs, where the package was installed without a prebuild that loads).
// Outputs: DIR/Release/vramfit.node (and libcudasim.so, the simulated driver, unless --target).
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The executable `name` on the PATH, or undefined. */
export function onPath(name, path = process.env.PATH ?? "") {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A module file resolved the way the package itself would resolve it (its own or a hoisted node_modules). */
function resolveFrom(root, specifier) {
  try {
    return createRequire(join(root, "package.json")).resolve(specifier);
  } catch {
    return undefined;
  }
}

function cxxCompiler() {
  const fromEnv = process.env.CXX?.split(" ")[0];
  if (fromEnv) return onPath(fromEnv) ?? (existsSync(fromEnv) ? fromEnv : undefined);
  return ["c++", "g++", "clang++"].map((name) => onPath(name)).find(Boolean);
}

/**
 * Node's own headers next to the running node (`<prefix>/include/node`, as official tarballs,
 * distribution packages and nvm install them), for node-gyp's --nodedir.
 */
export function localNodeDir() {
  const prefix = resolve(dirname(process.execPath), "..");
  return existsSync(join(prefix, "include", "node", "common.gypi")) ? prefix : undefined;
}

/** Where node-gyp is: npm's own (npm sets npm_config_node_gyp for scripts), an installed one, or npm's next to node. */
function nodeGypScript(root) {
  const candidates = [
    process.env.npm_config_node_gyp,
    resolveFrom(root, "node-gyp/bin/node-gyp.js"),
    resolve(dirname(process.execPath), "..", "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  ];
  return candidates.find((path) => path && existsSync(path));
}

function run(command, args, cwd, quiet) {
  const result = spawnSync(command, args, { cwd, stdio: quiet ? "pipe" : "inherit", encoding: "utf8" });
  if (result.error) return `could not run ${command}: ${result.error.message}`;
  if (result.status !== 0) {
    const tail = quiet ? `: ${`${result.stdout}${result.stderr}`.trim().split("\n").slice(-3).join(" | ")}` : "";
    return `exited with status ${result.status}${tail}`;
  }
  return undefined;
}

/** What is missing for a tool, as one reason, or undefined when nothing is. */
function missing(requirements) {
  const absent = requirements.filter(([present]) => !present).map(([, what]) => what);
  return absent.length > 0 ? `missing ${absent.join(", ")}` : undefined;
}

/** cmake-js: needs the cmake-js package, CMake and a C++ compiler; headers come from node-api-headers (offline). */
function tryCmakeJs(root, options) {
  const cmakeJs = resolveFrom(root, "cmake-js/bin/cmake-js");
  const absent = missing([
    [cmakeJs, "the cmake-js package"],
    [resolveFrom(root, "node-addon-api"), "the node-addon-api package"],
    [onPath("cmake"), "CMake"],
    [cxxCompiler(), "a C++ compiler (c++, g++ or clang++)"],
  ]);
  if (absent) return absent;
  const args = [cmakeJs, "compile", "--out", options.out];
  if (options.target) args.push("--target", options.target);
  // A prebuild carries its C++ runtime, so it loads where libstdc++ is older or absent.
  if (options.staticRuntime) args.push("--CDCMAKE_SHARED_LINKER_FLAGS=-static-libstdc++ -static-libgcc");
  const failed = run(process.execPath, args, root, options.quiet);
  return failed && `cmake-js ${failed}`;
}

/** node-gyp (npm ships one): needs node-addon-api, Python 3, make, a C++ compiler and Node's headers on disk. */
function tryNodeGyp(root, options) {
  if (resolve(root, options.out) !== resolve(root, "build")) return "node-gyp always builds into build/";
  const nodeGyp = nodeGypScript(root);
  const nodeDir = localNodeDir();
  const absent = missing([
    [nodeGyp, "node-gyp"],
    [resolveFrom(root, "node-addon-api"), "the node-addon-api package"],
    [cxxCompiler(), "a C++ compiler (c++, g++ or clang++)"],
    [onPath("make"), "make"],
    [onPath("python3") ?? onPath("python"), "Python 3"],
    // Without them node-gyp would download the headers from nodejs.org, which vramfit never does.
    [nodeDir, `Node's headers next to ${process.execPath} (include/node)`],
  ]);
  if (absent) return absent;
  // rebuild, but with build's positional argument: the one target asked for (make builds only it).
  for (const args of [["clean"], ["configure", `--nodedir=${nodeDir}`], ["build", ...(options.target ? [options.target] : []), `--nodedir=${nodeDir}`, "--jobs=max"]]) {
    const failed = run(process.execPath, [nodeGyp, ...args], root, options.quiet);
    if (failed) return `node-gyp ${args[0]} ${failed}`;
  }
  return undefined;
}

/**
 * Builds the addon from source. Returns every attempt with why it failed, so callers can say
 * what to install; never throws for a missing tool.
 * @param {{root?: string, out?: string, target?: string, staticRuntime?: boolean, cmakeOnly?: boolean, quiet?: boolean}} options
 * @returns {{ok: boolean, addonPath: string, attempts: {tool: string, ok: boolean, reason?: string}[]}}
 */
export function buildNative(options = {}) {
  const root = options.root ?? packageRoot;
  const settings = { out: options.out ?? "build", target: options.target, staticRuntime: options.staticRuntime ?? false, quiet: options.quiet ?? false };
  const addonPath = resolve(root, settings.out, "Release", "vramfit.node");
  const attempts = [];
  const tools = options.cmakeOnly ? [["cmake-js", tryCmakeJs]] : [["cmake-js", tryCmakeJs], ["node-gyp", tryNodeGyp]];
  for (const [tool, attempt] of tools) {
    const reason = attempt(root, settings);
    attempts.push(reason === undefined ? { tool, ok: true } : { tool, ok: false, reason });
    if (reason === undefined) return { ok: true, addonPath, attempts };
  }
  return { ok: false, addonPath, attempts };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: "string", default: "build" },
      target: { type: "string" },
      "static-runtime": { type: "boolean", default: false },
      "cmake-only": { type: "boolean", default: false },
    },
  });
  const result = buildNative({ out: values.out, target: values.target, staticRuntime: values["static-runtime"], cmakeOnly: values["cmake-only"] });
  if (!result.ok) {
    for (const a of result.attempts) console.error(`build-native: ${a.tool}: ${a.reason}`);
    process.exit(1);
  }
}

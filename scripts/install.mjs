#!/usr/bin/env node
// npm's install hook: use the prebuilt addon, else build from source; never fail the install.
// Order: an addon already built (build/Release) → prebuilds/<platform>-<arch>/vramfit.node →
// cmake-js → node-gyp. A prebuild that is there but does not load (too old a glibc, musl, another
// arch) is reported with why, then built from source where a compiler is. When nothing loads,
// vramfit still runs analytically, and the reasons and the fix are kept in
// build/vramfit-install.json, where `vramfit info` reads them (docs/install.md).
// VRAMFIT_BUILD_FROM_SOURCE=1 (or npm's npm_config_build_from_source=true) skips the prebuild.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildNative } from "./build-native.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const platform = `${process.platform}-${process.arch}`;
const built = join(root, "build", "Release", "vramfit.node");
const prebuilt = join(root, "prebuilds", platform, "vramfit.node");
const record = join(root, "build", "vramfit-install.json");

// A source checkout (src/ is not in the package): `npm ci` runs `prepare`, which builds everything.
if (existsSync(join(root, "src", "index.ts"))) process.exit(0);

// The loader's own explanation of a mismatch with this machine (dist/ is in the package; in a checkout it may not be built yet).
const { explainLoadFailure } = await import("../dist/native/prebuildCompatibility.js");

/**
 * Why the addon at `path` does not load here, or undefined when it does: the loader's error, and
 * when the machine is the cause, why (another arch, musl, the glibc found against the one required).
 */
function loadFailure(path) {
  if (!existsSync(path)) return "not found";
  try {
    const addon = createRequire(import.meta.url)(path);
    return typeof addon.loadDriver === "function" ? undefined : "not vramfit's addon";
  } catch (error) {
    const message = String(error.message).split("\n")[0];
    const why = explainLoadFailure(path, message);
    return why ? `${message}: ${why}` : message;
  }
}

const fromSource = [process.env.VRAMFIT_BUILD_FROM_SOURCE, process.env.npm_config_build_from_source].some((v) => /^(1|true)$/i.test(v ?? ""));
const attempts = [];
for (const path of fromSource ? [built] : [built, prebuilt]) {
  const failure = loadFailure(path);
  if (failure === undefined) {
    rmSync(record, { force: true });
    console.log(`vramfit: native addon ${relative(root, path)}`);
    process.exit(0);
  }
  attempts.push({ tool: relative(root, path), ok: false, reason: failure });
  if (path === prebuilt && failure !== "not found") console.log(`vramfit: ${relative(root, path)} does not load here (${failure}); building from source`);
}

// Only the addon: the simulated driver is for vramfit's own tests.
const build = buildNative({ root, target: "vramfit", quiet: true });
const builtFailure = build.ok ? loadFailure(built) : "not built";
if (builtFailure === undefined) {
  rmSync(record, { force: true });
  console.log(`vramfit: native addon built from source with ${build.attempts.at(-1).tool}`);
  process.exit(0);
}
// A build that succeeded but does not load is a failure of that tool too.
const buildAttempts = build.attempts.map((a) => (a.ok ? { tool: a.tool, ok: false, reason: `built, but it does not load: ${builtFailure}` } : a));
attempts.push(...buildAttempts);

const fromSourceFailures = buildAttempts.map((a) => `${a.tool}: ${a.reason}`).join("; ");
const reason = `no native addon for ${platform}: ${attempts.map((a) => `${a.tool}: ${a.reason}`).join("; ")}`;
const fix =
  "to measure on the GPU, build it from source: install CMake (or Python 3 and make) and a C++17 compiler, " +
  "add the build tools to your project (`npm install --save-dev cmake-js node-addon-api`), then run `npm rebuild vramfit` " +
  "(an npm that blocks dependencies' install scripts needs `npm install-scripts approve vramfit` first)";
mkdirSync(dirname(record), { recursive: true });
writeFileSync(record, `${JSON.stringify({ platform, node: process.version, attempts, reason, build: fromSourceFailures, fix }, null, 2)}\n`);
console.warn(`vramfit: ${reason}\nvramfit works without it, answering analytically (\`vramfit info\` says why); ${fix}.`);

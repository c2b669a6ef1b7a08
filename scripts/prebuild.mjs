#!/usr/bin/env node
// Builds the addon shipped in the package: prebuilds/<platform>-<arch>/vramfit.node (`npm run build:prebuild`).
// Node-API version 8, so one file serves every Node ≥ 20; the C++ runtime is linked statically, so
// it needs only glibc (the version this machine has or older: build it on the oldest distribution
// you support). Built by cmake-js in build/prebuild (incremental), then checked by loading it.
// Not committed to git: `npm pack`/`npm publish` run it (prepack), and so does the package test.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildNative, onPath } from "./build-native.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const platform = `${process.platform}-${process.arch}`;

const build = buildNative({ root, out: join("build", "prebuild"), target: "vramfit", staticRuntime: true, cmakeOnly: true });
if (!build.ok) {
  console.error(`prebuild: ${build.attempts.map((a) => `${a.tool}: ${a.reason}`).join("; ")}`);
  process.exit(1);
}

const destination = join(root, "prebuilds", platform, "vramfit.node");
mkdirSync(dirname(destination), { recursive: true });
copyFileSync(build.addonPath, destination);

// It must load in a fresh process, and export what the loader expects.
const check = spawnSync(process.execPath, ["-e", "const a = require(process.argv[1]); if (typeof a.loadDriver !== 'function') process.exit(1)", destination], { encoding: "utf8" });
if (check.status !== 0) {
  console.error(`prebuild: ${destination} does not load: ${check.stderr.trim()}`);
  process.exit(1);
}

let glibc = "unknown";
if (process.platform === "linux" && onPath("objdump")) {
  const symbols = execFileSync("objdump", ["-T", destination], { encoding: "utf8" });
  const versions = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (versions.length > 0) glibc = versions.at(-1).join(".");
}
console.log(`prebuild: ${relative(root, destination)} (Node-API 8, needs glibc ≥ ${glibc})`);

// Whether prebuilds/ holds current prebuilds for both architectures (`npm run build:prebuild`
// made them from today's native/), and the Debian root they were built in; else why not. The
// package tests skip what needs them with that reason, printed; in CI a missing or stale prebuild
// fails, unless .ci/run could not build them and says why in VRAMFIT_PREBUILD_SKIP.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sourcesHash } from "../../scripts/prebuild.mjs";
import { BUILD_ROOT, rootsDir } from "../../scripts/prebuild-root.mjs";
import { root } from "../cli/runCli.js";

export const PREBUILT_ARCHES = ["x64", "arm64"] as const;

export const prebuildPath = (arch: string): string => join(root, "prebuilds", `linux-${arch}`, "vramfit.node");

export type PrebuildState = { ready: true; rootPath: string } | { ready: false; reason: string };

function state(): PrebuildState {
  const skip = process.env.VRAMFIT_PREBUILD_SKIP;
  if (skip) return { ready: false, reason: skip };
  const sources = sourcesHash();
  for (const arch of PREBUILT_ARCHES) {
    const manifest = join(root, "prebuilds", `linux-${arch}`, "vramfit.json");
    if (!existsSync(prebuildPath(arch)) || !existsSync(manifest)) return { ready: false, reason: `no prebuilds/linux-${arch}: run \`npm run build:prebuild\`` };
    const made = (JSON.parse(readFileSync(manifest, "utf8")) as { sources?: string }).sources;
    if (made !== sources) return { ready: false, reason: `prebuilds/linux-${arch} was built from other sources than native/ now: run \`npm run build:prebuild\`` };
  }
  const rootPath = join(rootsDir(), BUILD_ROOT.name);
  if (!existsSync(join(rootPath, ".vramfit-root.json"))) return { ready: false, reason: `no Debian ${BUILD_ROOT.suite} root in ${rootPath}: run \`npm run build:prebuild\`` };
  return { ready: true, rootPath };
}

/** The state, computed once per test file; announced on stderr when the tests that need it will skip. */
export function prebuildState(): PrebuildState {
  const found = state();
  if (!found.ready) {
    if (process.env.CI && !process.env.VRAMFIT_PREBUILD_SKIP) throw new Error(`CI must build the prebuilds before the tests (.ci/run): ${found.reason}`);
    console.warn(`SKIPPED (prebuild tests): ${found.reason}`);
  }
  return found;
}

/** A test title that carries the reason when it is skipped. */
export function titled(title: string, found: PrebuildState): string {
  return found.ready ? title : `${title} [skipped: ${found.reason}]`;
}

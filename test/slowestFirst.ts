// The files vitest starts first, slowest first (vitest.config.ts's sequencer): test/slowest-first.json, the per-file
// times of one CI run, rewritten by `node scripts/slowest-first.mjs LOG`; test/unit/slowestFirst.test.ts fails when a
// file it names is gone (a rename would otherwise only lose the file its place, quietly).
import { readFileSync } from "node:fs";

export interface SlowestFirst {
  /** Which run the seconds come from. */
  measured: string;
  files: { file: string; seconds: number }[];
}

export const slowestFirst: SlowestFirst = JSON.parse(readFileSync(new URL("./slowest-first.json", import.meta.url), "utf8")) as SlowestFirst;

/** The test files, relative to the repository, longest first. */
export const SLOWEST_FIRST: readonly string[] = [...slowestFirst.files].sort((a, b) => b.seconds - a.seconds).map((f) => f.file);

/** Where a test file (its absolute path) starts: its place in SLOWEST_FIRST, or after all of them. */
export function slowestFirstRank(moduleId: string): number {
  const at = SLOWEST_FIRST.findIndex((name) => moduleId.replaceAll("\\", "/").endsWith(`/${name}`));
  return at < 0 ? SLOWEST_FIRST.length : at;
}

/**
 * Where CI starts a file whose resources .ci/run makes beside the tests (test/ciResources.ts), from the
 * `await ciResource("…")` lines in its text: 0 where it awaits nothing, then in the order they are made, 1 the CPU venv,
 * 2 the CUDA venv, 3 the prebuilds (made last, after npm ci and the bullseye root) or all of them ("settled"). So the
 * workers are not held early
 * by files waiting on what is not made yet, and the files that run PyTorch start once the installs are mostly done:
 * first, they ran beside them and three met their time limits (a clean-clone run beside two CPU hogs at load 15).
 */
export function ciResourceGroup(text: string): 0 | 1 | 2 | 3 {
  const awaited = [...text.matchAll(/^await ciResource\("(\w+)"\);$/gm)].map((m) => m[1]);
  if (awaited.length === 0) return 0;
  if (awaited.includes("prebuilds") || awaited.includes("settled")) return 3;
  return awaited.includes("cuda") ? 2 : 1;
}

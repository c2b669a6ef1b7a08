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

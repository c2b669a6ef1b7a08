// What a fuzz run tried and what came of it, for scripts/fuzz.mjs's figures (docs/reliability.md):
// inputs, answers, one-line rejections, and the three failures that must stay at 0 — stack traces
// (any exception that is not a one-line VramfitError), hangs, wrong exit statuses.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Tally {
  /** What was fuzzed, e.g. `parseBytes` or `cli in process`. */
  name: string;
  inputs: number;
  answers: number;
  rejections: number;
  stackTraces: number;
  hangs: number;
  wrongStatuses: number;
  /** The slowest single input, in ms. */
  slowestMs: number;
}

const tallies: Tally[] = [];

/**
 * A fuzz run's scale: `VRAMFIT_FUZZ_SCALE` times the counts CI runs (default 1). The campaign
 * behind the documented figures runs more (scripts/fuzz.mjs --scale N).
 */
export const FUZZ_SCALE = Math.max(1, Number(process.env.VRAMFIT_FUZZ_SCALE ?? 1) || 1);

export function runs(ciCount: number): number {
  return Math.round(ciCount * FUZZ_SCALE);
}

/** A new tally, written out with the others by writeTallies(). */
export function tally(name: string): Tally {
  const t: Tally = { name, inputs: 0, answers: 0, rejections: 0, stackTraces: 0, hangs: 0, wrongStatuses: 0, slowestMs: 0 };
  tallies.push(t);
  return t;
}

/** Times one input and counts it (the caller counts how it ended). */
export function timed<T>(t: Tally, body: () => T): T {
  const started = performance.now();
  t.inputs += 1;
  try {
    return body();
  } finally {
    t.slowestMs = Math.max(t.slowestMs, performance.now() - started);
  }
}

/** Writes every tally of this file to `VRAMFIT_FUZZ_REPORT/<file>.json`, when that is set. */
export function writeTallies(file: string): void {
  const dir = process.env.VRAMFIT_FUZZ_REPORT;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${file}.json`), JSON.stringify({ scale: FUZZ_SCALE, tallies }, null, 2));
}

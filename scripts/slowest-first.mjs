#!/usr/bin/env node
// Rewrites test/slowest-first.json, the files vitest starts first (vitest.config.ts), from the per-file times of a run:
//   node scripts/slowest-first.mjs LOG [--top N] [--measured TEXT]
// LOG: the output of `.ci/run` or `npm test` (vitest's default reporter prints "✓ test/x.test.ts (N tests) 12345ms"
// per file, hooks included: vitest's JSON report leaves a beforeAll's time out, 0.1 s for genuineAllocator's 175 s).
// Keeps the N slowest (default 13) that exist in this checkout, longest first. A clean clone's CI run beside two CPU
// hogs is the run to take (/work/team/ci5.sh keeps each run's log): the order matters where the machine is busiest.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "13" }, measured: { type: "string" }, out: { type: "string" } } });
const top = Number(values.top);
if (positionals.length !== 1 || !Number.isInteger(top) || top < 1) {
  console.error("slowest-first: expected one LOG (the output of .ci/run or npm test) and --top N, a positive integer");
  process.exit(2);
}
const log = readFileSync(positionals[0], "utf8").replace(/\x1b\[[0-9;]*m/g, "");
/** Each file's time from the default reporter's summary line for it (the last one, where a file is listed twice). */
const seconds = new Map();
for (const [, file, ms] of log.matchAll(/^ *[✓×❯↓] (test\/\S+\.test\.ts) \(\d+ tests?[^)]*\)\s+(\d+)ms$/gm)) seconds.set(file, Math.round(Number(ms) / 1000));
if (seconds.size === 0) {
  console.error(`slowest-first: ${positionals[0]} has no per-file lines of vitest's default reporter`);
  process.exit(1);
}
const gone = [...seconds.keys()].filter((file) => !existsSync(join(root, file)));
const files = [...seconds]
  .filter(([file]) => existsSync(join(root, file)))
  .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  .slice(0, top)
  .map(([file, s]) => ({ file, seconds: s }));
const measured = values.measured ?? `the per-file times in ${positionals[0]}`;
const out = values.out ?? join(root, "test", "slowest-first.json");
// One file a line, so that a refresh reads as a diff of names and seconds.
writeFileSync(out, `{\n  "measured": ${JSON.stringify(measured)},\n  "files": [\n${files.map((f) => `    ${JSON.stringify(f)}`).join(",\n")}\n  ]\n}\n`);
console.log(`slowest-first: ${files.length} files written to ${out}${gone.length > 0 ? `; not in this checkout, left out: ${gone.join(", ")}` : ""}`);

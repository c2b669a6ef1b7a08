#!/usr/bin/env node
// Wall and CPU time of one device's probe against eight identical devices probed at once (probeEach), through the addon on each checkout's own simulated driver.
// usage: node scripts/bench-probe-each.mjs [--runs N] [CHECKOUT...]   (default: this checkout; each built)
// Each checkout runs in its own bare process (env -i like: PATH only, 8 simulated H100s), in turns,
// so two builds are compared under the same load. A probe is 733 allocations (the advice case's
// size), touched, with a 1 GiB reserve (free memory read after each): the calls `batch --device
// all` makes 14 times per answer. Eight at once on two cores can take at best 4x one.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const H100 = "NVIDIA H100 80GB HBM3:85045477376:0";
const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");

if (process.env.BENCH_PROBE_EACH_CHILD) {
  // The child: one checkout, timed in process.
  const root = process.env.BENCH_PROBE_EACH_CHILD;
  const runs = Number(process.env.BENCH_PROBE_EACH_RUNS);
  const addon = createRequire(import.meta.url)(`${root}/build/Release/vramfit.node`);
  addon.setErrorClass(class extends Error {});
  await addon.loadDriver(`${root}/build/Release/libcudasim.so`);
  const sizes = Float64Array.from({ length: 733 }, (_, i) => ((i % 7) + 1) * 8 * 2 ** 20);
  const options = { touch: true, reserveBytes: 2 ** 30, releases: [] };
  const ordinals = [0, 1, 2, 3, 4, 5, 6, 7];
  const timed = async (call) => {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await call();
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    return [wall, (used.user + used.system) / 1000];
  };
  await addon.probeEach(ordinals, sizes, options); // threads started, contexts made
  const one = [], eight = [];
  for (let i = 0; i < runs; i++) {
    one.push(await timed(() => addon.probe(0, sizes, options)));
    eight.push(await timed(() => addon.probeEach(ordinals, sizes, options)));
  }
  process.stdout.write(JSON.stringify({ one, eight }));
  process.exit(0);
}

/** Bad input: one line saying what was given and what was expected, exit 2 (never a stack trace). */
function usageError(message) {
  process.stderr.write(`bench-probe-each: ${message}\n`);
  process.exit(2);
}
let parsed;
try {
  parsed = parseArgs({ options: { runs: { type: "string", default: "100" } }, allowPositionals: true });
} catch (error) {
  usageError(`${error.message} (usage: node scripts/bench-probe-each.mjs [--runs N] [CHECKOUT...])`);
}
const { values, positionals } = parsed;
if (!/^[1-9][0-9]{0,5}$/.test(values.runs)) usageError(`--runs ${JSON.stringify(values.runs)}: expected a whole number of runs from 1 to 999999`);
const checkouts = (positionals.length > 0 ? positionals : [here]).map((p) => resolve(p));
for (const checkout of checkouts) {
  for (const built of ["build/Release/vramfit.node", "build/Release/libcudasim.so"]) {
    if (!existsSync(resolve(checkout, built))) usageError(`CHECKOUT ${checkout}: no ${built}; expected a built checkout (npm run build)`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const results = new Map(checkouts.map((c) => [c, { one: [], eight: [] }]));
for (let round = 0; round < 2; round++) {
  for (const checkout of round % 2 === 0 ? checkouts : [...checkouts].reverse()) {
    const env = { PATH: process.env.PATH ?? "", CUDASIM_DEVICES: Array(8).fill(H100).join(";"), BENCH_PROBE_EACH_CHILD: checkout, BENCH_PROBE_EACH_RUNS: String(Math.ceil(Number(values.runs) / 2)) };
    const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`${checkout}: ${run.stderr}`);
    const { one, eight } = JSON.parse(run.stdout);
    results.get(checkout).one.push(...one);
    results.get(checkout).eight.push(...eight);
  }
}
console.log(`probe of 733 allocations: one device (probe) against eight at once (probeEach); medians of ${values.runs} each, CPU = the process's mean per call`);
console.log("checkout | one: wall ms, CPU ms | eight: wall ms, CPU ms | eight / one: wall, CPU");
for (const [checkout, { one, eight }] of results) {
  const w1 = median(one.map((x) => x[0])), c1 = mean(one.map((x) => x[1]));
  const w8 = median(eight.map((x) => x[0])), c8 = mean(eight.map((x) => x[1]));
  console.log(`${checkout} | ${w1.toFixed(3)}, ${c1.toFixed(3)} | ${w8.toFixed(3)}, ${c8.toFixed(3)} | ${(w8 / w1).toFixed(2)}x, ${(c8 / c1).toFixed(2)}x`);
}

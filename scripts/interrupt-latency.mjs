#!/usr/bin/env node
// Time from SIGTERM to exit of the two long analytic commands interruptAnyCommand.test.ts bounds at a second (`gpus --fit`
// and advice on the largest transformer the limits allow), for each built checkout in turns.
// usage: node scripts/interrupt-latency.mjs [--runs N] [CHECKOUT...]   (default: this checkout; each built)
// Run it beside CPU hogs to see what load does to the bound (docs/reliability.md).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

function usageError(message) {
  process.stderr.write(`interrupt-latency: ${message}\n`);
  process.exit(2);
}
let parsed;
try {
  parsed = parseArgs({ options: { runs: { type: "string", default: "6" } }, allowPositionals: true });
} catch (error) {
  usageError(`${error.message} (usage: node scripts/interrupt-latency.mjs [--runs N] [CHECKOUT...])`);
}
const { values, positionals } = parsed;
if (!/^[1-9][0-9]{0,3}$/.test(values.runs)) usageError(`--runs ${JSON.stringify(values.runs)}: expected a whole number of runs from 1 to 9999`);
const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const checkouts = (positionals.length > 0 ? positionals : [here]).map((p) => resolve(p));
for (const checkout of checkouts) {
  if (!existsSync(join(checkout, "dist", "cli", "vramfit.cjs"))) usageError(`CHECKOUT ${checkout}: no dist/cli/vramfit.cjs; expected a built checkout (npm run build)`);
}

const scratch = mkdtempSync(join(tmpdir(), "vramfit-interrupt-latency-"));
const spec = join(scratch, "largest.json");
// The same spec as interruptAnyCommand.test.ts's LARGEST.
writeFileSync(spec, JSON.stringify({ kind: "transformer", hiddenSize: 4096, layers: 256, heads: 32, vocabSize: 32000, maxPositions: 4096, ffn: "gated", ffnSize: 11008, positions: "rotary" }));
const commands = {
  "gpus --fit": ["gpus", "--fit", "--spec", spec, "--min-batch", "100000"],
  advice: ["batch", "--spec", spec, "--gpu", "T4", "--min-batch", "100000"],
};
const times = new Map();
for (let run = 0; run < Number(values.runs); run++) {
  for (const checkout of checkouts) {
    for (const [name, args] of Object.entries(commands)) {
      const child = spawn(process.execPath, [join(checkout, "bin", "vramfit.js"), ...args], { stdio: "ignore", env: { PATH: process.env.PATH ?? "", XDG_CACHE_HOME: scratch } });
      await new Promise((done) => setTimeout(done, 600)); // computing by then (the test waits 300 ms after the spec is read)
      const sent = performance.now();
      child.kill("SIGTERM");
      await new Promise((done) => child.once("exit", done));
      const key = `${name}  ${checkout}`;
      times.set(key, [...(times.get(key) ?? []), Math.round(performance.now() - sent)]);
    }
  }
}
console.log(`ms from SIGTERM to exit, ${values.runs} runs each, sorted (the test's bound: 1000)`);
for (const [key, ms] of times) console.log(`${key}: ${ms.sort((a, b) => a - b).join(" ")}`);
rmSync(scratch, { recursive: true, force: true });

#!/usr/bin/env node
// Whether answering a plan goes down the floors of src/ at run time: samples findMaxBatch's call stacks and lists every call that climbs a floor (issue 24).
//   npm run build:ts && node scripts/floor-calls.mjs
// The floors are .dependency-cruiser.cjs's (which checks the imports; this checks the calls, where a
// callback can still climb). It answers an analytic plan (Llama-2-7B, five sequence lengths, each a
// new plan) and a traced one (test/fixtures/trace/llama-3.2-1b.trace.json) with V8's sampling profiler
// at 20 µs, and maps each sampled caller → callee pair between modules of dist/ to their floors.
import { readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const lib = await import(new URL("../dist/index.js", import.meta.url).href);
const FLOORS = ["kernel", "native", "devices", "workload", "plan", "step", "fit", "job", "advice", "library", "cli"];

/** The floor of a module of dist/ (undefined for anything else: Node's own code, node_modules). */
function floorOf(url) {
  const m = /\/dist\/(.*)\.js$/.exec(url);
  if (m === null) return undefined;
  if (/^(errors|units|count|duration|suggest|checkpoint|checks)$/.test(m[1])) return "kernel";
  return m[1] === "index" ? "library" : m[1].split("/")[0];
}
const where = (frame) => `${frame.url.replace(/.*\/dist\//, "")}:${frame.functionName || "(anonymous)"}`;

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 20 });
await session.post("Profiler.start");
const traced = lib.planTrace({ path: "llama-3.2-1b.trace.json", json: JSON.parse(readFileSync(`${root}test/fixtures/trace/llama-3.2-1b.trace.json`, "utf8")) });
for (let i = 0; i < 5; i++) {
  const plan = lib.planMemory(lib.resolveWorkload({ model: "llama-2-7b" }), { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 + i });
  await lib.findMaxBatch(plan, { gpu: "H100-80GB" });
  await lib.findMaxBatch({ ...traced, tensors: [...traced.tensors] }, { gpu: "A10" }); // a new tensor list: nothing cached
}
const { profile } = await session.post("Profiler.stop");

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
let calls = 0;
const climbs = new Map();
for (const n of profile.nodes) {
  const to = floorOf(n.callFrame.url);
  if (to === undefined) continue;
  let p = parentOf.get(n.id);
  while (p !== undefined && floorOf(byId.get(p).callFrame.url) === undefined) p = parentOf.get(p);
  if (p === undefined) continue;
  const from = floorOf(byId.get(p).callFrame.url);
  calls += 1;
  if (FLOORS.indexOf(to) > FLOORS.indexOf(from)) {
    const key = `${from} → ${to}: ${where(byId.get(p).callFrame)} → ${where(n.callFrame)}`;
    climbs.set(key, (climbs.get(key) ?? 0) + 1);
  }
}
console.log(`${calls} sampled calls between modules of dist/, ${[...climbs.values()].reduce((a, b) => a + b, 0)} of them up a floor`);
for (const [key, count] of climbs) console.log(`  ${count}× ${key}`);

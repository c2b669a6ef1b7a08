#!/usr/bin/env node
// Prints docs/memory-model.md's step-peak table from test/fixtures/torch-step-peaks*.json; reproduce: node scripts/reference/step-peak-table.mjs [--fixture FILE].
// The table of docs/memory-model.md ("Checked against a real training step"): vramfit's step peak
// next to the real PyTorch steps of test/fixtures/torch-step-peaks.json (scripts/reference/measure-step-peak.py).
// Like with like: allocated bytes, every tensor rounded up to 512 B, no context, no allocator segments.
//   npm run build:ts && node scripts/reference/step-peak-table.mjs [--json] [--fixture test/fixtures/torch-step-peaks-amp.json]
//   node scripts/reference/step-peak-table.mjs --fixture … --phases vgg16/amp/sgd/foreach   (stage by stage, real against vramfit)
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const { buildPlan } = await import(resolve(root, "dist/plan/buildPlan.js"));
const { largestBatchWithin, peakBytes, peakPhase, phaseBytes, phasesOf } = await import(resolve(root, "dist/plan/memoryPlan.js"));
const { presetWorkload } = await import(resolve(root, "dist/workload/presets.js"));

const fixtureArg = process.argv.indexOf("--fixture");
const fixturePath = fixtureArg > 0 ? process.argv[fixtureArg + 1] : "test/fixtures/torch-step-peaks.json";
const fixture = JSON.parse(readFileSync(resolve(root, fixturePath), "utf8"));
const allocated = (bytes) => Math.ceil(bytes / 512) * 512;

/** The workload each case measured (the script trains BertForSequenceClassification: a 2-way classifier on the pooler). */
function planOf(c) {
  let workload = presetWorkload(c.model);
  if (c.model === "bert-base") workload = { ...workload, architecture: { ...workload.architecture, classes: 2 } };
  const seq = c.model === "gpt2" ? { seq: 1024 } : c.model === "bert-base" ? { seq: 512 } : {};
  const plan = buildPlan(workload, { mode: "train", precision: c.precision, optimizer: c.optimizer, optimizerImpl: c.optimizerImpl, attention: "eager", ...seq });
  // A CPU step has no cuBLAS workspaces (src/plan/blasWorkspace.ts), as test/unit/stepPeak.test.ts plans it.
  return { ...plan, tensors: plan.tensors.filter((t) => !t.name.startsWith("cublas.workspace")) };
}

const rows = fixture.cases.map((c) => {
  const plan = planOf(c);
  const vramfit = largestBatchWithin(plan, c.budgetBytes, allocated);
  const atCheck = peakBytes(plan, c.checkBatch, allocated);
  return {
    case: `${c.model} ${c.optimizer} (${c.optimizerImpl})`,
    realBatch: c.maxBatchForBudget,
    vramfitBatch: vramfit,
    ratio: vramfit / c.maxBatchForBudget,
    realPeakPhase: c.peakPhaseAtMaxBatch,
    vramfitPeakPhase: phasesOf(plan)[peakPhase(plan, c.maxBatchForBudget, allocated)],
    checkBatch: c.checkBatch,
    realAtCheck: c.measuredPeakAtCheckBytes,
    vramfitAtCheck: atCheck,
  };
});

const phasesArg = process.argv.indexOf("--phases");
if (phasesArg > 0) {
  // Where a case's bytes differ: each stage's most live bytes, as the script labels its ops
  // (`backward layer4.2`), against the most of vramfit's phases in that stage, at the check batch
  // and at the real largest batch.
  const c = fixture.cases.find((x) => x.case === process.argv[phasesArg + 1]);
  if (!c) {
    console.error(`--phases: no case ${process.argv[phasesArg + 1]} in ${fixturePath}; expected one of ${fixture.cases.map((x) => x.case).join(", ")}`);
    process.exit(2);
  }
  const plan = planOf(c);
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  for (const [batch, real] of [[c.checkBatch, c.phasesAtCheck], [c.maxBatchForBudget, c.phasesAtMaxBatch]]) {
    const live = phaseBytes(plan, batch, allocated);
    const stage = new Map();
    phasesOf(plan).forEach((phase, i) => {
      const key = phase.split(" ").slice(0, 2).join(" ");
      stage.set(key, Math.max(stage.get(key) ?? 0, live[i]));
    });
    console.log(`\n${c.case} at batch ${batch}\n| stage | real (MiB) | vramfit (MiB) | vramfit − real |\n|---|---|---|---|`);
    for (const r of real.filter((r) => stage.has(r.phase))) console.log(`| ${r.phase} | ${mib(r.bytes)} | ${mib(stage.get(r.phase))} | ${mib(stage.get(r.phase) - r.bytes)} |`);
  }
} else if (process.argv.includes("--json")) {
  process.stdout.write(`${JSON.stringify(rows, null, 1)}\n`);
} else {
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  console.log(`| case | real largest batch (79 GiB) | vramfit | ratio | real peak in | vramfit's peak in | real at batch ${rows[0]?.checkBatch} (MiB) | vramfit (MiB) |`);
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(`| ${r.case} | ${r.realBatch} | ${r.vramfitBatch} | ${r.ratio.toFixed(3)} | ${r.realPeakPhase} | ${r.vramfitPeakPhase} | ${mib(r.realAtCheck)} | ${mib(r.vramfitAtCheck)} (${r.vramfitAtCheck >= r.realAtCheck ? "+" : "−"}${mib(Math.abs(r.vramfitAtCheck - r.realAtCheck))}) |`);
  }
  const worst = rows.reduce((a, b) => (Math.abs(1 - b.ratio) > Math.abs(1 - a.ratio) ? b : a));
  console.log(`\nworst ratio ${worst.ratio.toFixed(3)} (${worst.case}); ${rows.length} cases; fixture: ${fixture.command} (torch ${fixture.torch})`);
}

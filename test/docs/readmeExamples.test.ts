// Every example output in the README and docs/*.md is vramfit's own, regenerated and compared (timings aside): a
// change that moves an answer fails here until `node scripts/readme-examples.mjs` rewrites the documents.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const check = (readme: string) =>
  spawnSync(process.execPath, ["scripts/readme-examples.mjs", "--check", "--readme", readme], { cwd: root, encoding: "utf8", timeout: 120_000 });
const checkDocs = (...docs: string[]) =>
  spawnSync(process.execPath, ["scripts/readme-examples.mjs", "--check", ...docs.flatMap((doc) => ["--doc", doc])], { cwd: root, encoding: "utf8", timeout: 120_000 });
const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(root, "docs", f));

// Each case runs readme-examples.mjs (dozens of vramfit runs): 10-40 s on an idle 2-core machine, and two cases
// passed 30 s beside two CPU hogs in a clean-clone CI run (4d95255). The check's own limit is 120 s.
describe("README examples", { timeout: 180_000 }, () => {
  it("the README stays a front door: at most 250 lines (the reference lives in docs/)", () => {
    expect(readFileSync(join(root, "README.md"), "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(250);
  });

  it("are what vramfit prints today (regenerate: node scripts/readme-examples.mjs)", () => {
    const run = check(join(root, "README.md"));
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("a changed answer is caught: the plan example with one byte count altered is stale", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const altered = readme.replace(/(<!-- plan-example:begin -->[\s\S]*?total\s+)(\d+\.\d\d)/, (_, before: string, bytes: string) => `${before}${(Number(bytes) + 1).toFixed(2)}`);
    expect(altered).not.toBe(readme);
    const file = join(mkdtempSync(join(tmpdir(), "vramfit-readme-")), "README.md");
    writeFileSync(file, altered);
    const run = check(file);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("stale example output in plan-example");
  });

  it("docs/*.md's console blocks and quoted figures are what vramfit prints today", () => {
    const run = checkDocs(...docs);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  // memory-model.md's altered figures (below) share one document and one --check: each alteration is its own
  // marker, and --check names every stale one, so each case still asserts that its own figure is caught.
  const memoryModel = readFileSync(join(root, "docs", "memory-model.md"), "utf8");
  const alterations: ((doc: string) => string)[] = [];
  let alteredCheck: ReturnType<typeof checkDocs> | undefined;
  /** Registers an alteration of memory-model.md (checked against the unaltered text); runs the shared check once. */
  const alter = (change: (doc: string) => string) => {
    expect(change(memoryModel)).not.toBe(memoryModel);
    alterations.push(change);
  };
  const alteredMemoryModel = () => {
    if (alteredCheck === undefined) {
      const file = join(mkdtempSync(join(tmpdir(), "vramfit-docs-")), "memory-model.md");
      writeFileSync(file, alterations.reduce((doc, change) => change(doc), memoryModel));
      alteredCheck = checkDocs(file);
    }
    return alteredCheck;
  };
  const seqField = "--solve seq --batch 8 --gpu H100-80GB → seq";
  const nf4Field = "highlights[part=dequantization buffer].bytes in MiB";
  // The torchvision table (resnet50), SD 2.1's fp32 table (512²) and Korthikanti et al.'s Table 2 (full recomputation).
  const tableFields = [
    "--model resnet50 --precision fp32 --optimizer sgd --image 224 --batch 1 → tensorSums.step.activations.perSampleBytes",
    "--model sd2.1-unet --precision fp32 --attention eager --batch 1 --image 512 → tensorSums.step.activations.perSampleBytes",
    "--batch 1 --checkpointing full → tensorSums.firstLayer.activations.perSampleBytes",
  ];
  // Registered before any case runs, so that whichever case runs first checks every alteration.
  alter((doc) => {
    const quoted = /<!-- vramfit: batch --model llama-3.1-8b --mode infer --precision bf16 --solve seq --batch 8 --gpu H100-80GB → seq -->([\d,]+)<!-- \/vramfit -->/.exec(doc);
    expect(quoted).not.toBeNull();
    const [whole, figure] = [quoted![0], quoted![1]!];
    return doc.replace(whole, whole.replace(`-->${figure}<`, `-->${Number(figure.replace(/,/g, "")) + 1}<`));
  });
  alter((doc) => {
    const quoted = /(<!-- vramfit: [^>]*→ highlights\[part=dequantization buffer\]\.bytes in MiB -->)(\d+)<!-- \/vramfit -->/.exec(doc);
    expect(quoted).not.toBeNull();
    return doc.replace(quoted![0], `${quoted![1]}${Number(quoted![2]) + 1}<!-- /vramfit -->`);
  });
  for (const field of tableFields)
    alter((doc) => {
      const quoted = new RegExp(`(<!-- vramfit: plan [^>]*${field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} -->)([\\d,]+)<!-- /vramfit -->`).exec(doc);
      expect(quoted, field).not.toBeNull();
      return doc.replace(quoted![0], `${quoted![1]}${Number(quoted![2]!.replace(/,/g, "")) + 512}<!-- /vramfit -->`);
    });

  it("the docs quote generated figures: memory-model.md's --solve seq answer at batch 8 is one, and an altered one is stale", () => {
    const run = alteredMemoryModel();
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(seqField);
  });

  it("figures picked by a filter are checked too: memory-model.md's nf4 dequantization buffer, altered, is stale", () => {
    const run = alteredMemoryModel();
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(nf4Field);
  });

  it("the tables of saved activations are generated: one altered figure in each of memory-model.md's three is stale", () => {
    const run = alteredMemoryModel();
    expect(run.status).toBe(1);
    for (const field of tableFields) expect(run.stderr).toContain(field);
  });

  it("a console block in the docs is run again: cli.md's --solve seq block with its output removed is stale", () => {
    const doc = readFileSync(join(root, "docs", "cli.md"), "utf8");
    const altered = doc.replace(/(<!-- vramfit-output:begin -->\n```console\n\$ vramfit batch [^\n]*--solve seq[^\n]*\n)[^`]*```/, "$1```");
    expect(altered).not.toBe(doc);
    const file = join(mkdtempSync(join(tmpdir(), "vramfit-docs-")), "cli.md");
    writeFileSync(file, altered);
    const run = checkDocs(file);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("cli.md's block");
  });
});

// Every example output in the README and docs/*.md is vramfit's own, regenerated and compared (timings aside): a
// change that moves an answer fails here until `node scripts/readme-examples.mjs` rewrites the documents.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readmePath = join(root, "README.md");
const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(root, "docs", f));
/** A copy of a document, altered, in a folder of its own (the file keeps its name: the stale messages name it). */
const alteredCopy = (name: string, text: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "vramfit-docs-")), name);
  writeFileSync(file, text);
  return file;
};

// One --check over the README, every docs/*.md and the altered copies the cases below make, all registered before any
// case runs: commands the copies share with the originals run once (readme-examples.mjs caches each command, console
// block and library example per run), where a --check per case ran each document's dozens of vramfit runs again
// (73 s for the file at load 10, 02:14). --report says which file each stale block is in; each case reads its own.
interface CheckedDocs {
  status: number | null;
  stderr: string;
  report: Record<string, string[]>;
}
const alteredDocs: { file: string; readme: boolean }[] = [];
let checked: CheckedDocs | undefined;
const checkAll = (): CheckedDocs => {
  if (checked === undefined) {
    const reportFile = join(mkdtempSync(join(tmpdir(), "vramfit-docs-report-")), "report.json");
    const files = [{ file: readmePath, readme: true }, ...docs.map((file) => ({ file, readme: false })), ...alteredDocs];
    const args = files.flatMap(({ file, readme }) => [readme ? "--readme" : "--doc", file]);
    // Its spawn limit, beside two CPU hogs: the whole check took 35-40 s at load 10.
    const run = spawnSync(process.execPath, ["scripts/readme-examples.mjs", "--check", ...args, "--report", reportFile], { cwd: root, encoding: "utf8", timeout: 400_000 });
    checked = { status: run.status, stderr: run.stderr, report: existsSync(reportFile) ? (JSON.parse(readFileSync(reportFile, "utf8")) as Record<string, string[]>) : {} };
  }
  return checked;
};
/** The stale blocks --check found in `file` (undefined: it did not report on the file). */
const staleIn = (file: string) => checkAll().report[file];

// The one check runs in the first case that asks for it; the others read its report.
describe("README examples", { timeout: 450_000 }, () => {
  it("the README stays a front door: at most 250 lines (the reference lives in docs/)", () => {
    expect(readFileSync(readmePath, "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(250);
  });

  // Altered copies, registered before any case runs (each case then asserts that its own alteration is named).
  const readme = readFileSync(readmePath, "utf8");
  const alteredReadme = readme.replace(/(<!-- plan-example:begin -->[\s\S]*?total\s+)(\d+\.\d\d)/, (_, before: string, bytes: string) => `${before}${(Number(bytes) + 1).toFixed(2)}`);
  const alteredReadmeFile = alteredCopy("README.md", alteredReadme);
  alteredDocs.push({ file: alteredReadmeFile, readme: true });

  it("--check exits 1 naming every stale block, and only the altered copies' (the documents themselves are current)", () => {
    const { status, stderr, report } = checkAll();
    expect(Object.keys(report).sort()).toEqual([readmePath, ...docs, ...alteredDocs.map((d) => d.file)].sort());
    const expected = alteredDocs.flatMap((d) => report[d.file]!);
    expect(expected.length).toBeGreaterThan(alteredDocs.length); // memory-model.md's copy has five stale figures
    expect({ status, stderr }).toEqual({ status: 1, stderr: `stale example output in ${expected.join(", ")} (regenerate: node scripts/readme-examples.mjs)\n` });
  });

  it("are what vramfit prints today (regenerate: node scripts/readme-examples.mjs)", () => {
    expect(staleIn(readmePath)).toEqual([]);
  });

  it("a changed answer is caught: the plan example with one byte count altered is stale", () => {
    expect(alteredReadme).not.toBe(readme);
    expect(staleIn(alteredReadmeFile)).toEqual(["plan-example"]);
  });

  it("docs/*.md's console blocks and quoted figures are what vramfit prints today", () => {
    expect(docs.length).toBeGreaterThan(5);
    expect(Object.fromEntries(docs.map((doc) => [doc, staleIn(doc)]))).toEqual(Object.fromEntries(docs.map((doc) => [doc, []])));
  });

  // memory-model.md's altered figures (below) share one altered copy: each alteration is its own marker, and --check
  // names every stale one, so each case still asserts that its own figure is caught.
  const memoryModel = readFileSync(join(root, "docs", "memory-model.md"), "utf8");
  const alterations: ((doc: string) => string)[] = [];
  /** Registers an alteration of memory-model.md (checked against the unaltered text). */
  const alter = (change: (doc: string) => string) => {
    expect(change(memoryModel)).not.toBe(memoryModel);
    alterations.push(change);
  };
  const seqField = "--solve seq --batch 8 --gpu H100-80GB → seq";
  const nf4Field = "highlights[part=dequantization buffer].bytes in MiB";
  // The torchvision table (resnet50), SD 2.1's fp32 table (512²) and Korthikanti et al.'s Table 2 (full recomputation).
  const tableFields = [
    "--model resnet50 --precision fp32 --optimizer sgd --image 224 --batch 1 → tensorSums.step.activations.perSampleBytes",
    "--model sd2.1-unet --precision fp32 --attention eager --batch 1 --image 512 → tensorSums.step.activations.perSampleBytes",
    "--batch 1 --checkpointing full → tensorSums.firstLayer.activations.perSampleBytes",
  ];
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
  const alteredMemoryModel = alteredCopy("memory-model.md", alterations.reduce((doc, change) => change(doc), memoryModel));
  alteredDocs.push({ file: alteredMemoryModel, readme: false });
  const staleFigures = () => (staleIn(alteredMemoryModel) ?? []).join("\n");

  it("the docs quote generated figures: memory-model.md's --solve seq answer at batch 8 is one, and an altered one is stale", () => {
    expect(staleFigures()).toContain(seqField);
  });

  it("figures picked by a filter are checked too: memory-model.md's nf4 dequantization buffer, altered, is stale", () => {
    expect(staleFigures()).toContain(nf4Field);
  });

  it("the tables of saved activations are generated: one altered figure in each of memory-model.md's three is stale", () => {
    for (const field of tableFields) expect(staleFigures()).toContain(field);
  });

  const cliDoc = readFileSync(join(root, "docs", "cli.md"), "utf8");
  const alteredCli = cliDoc.replace(/(<!-- vramfit-output:begin -->\n```console\n\$ vramfit batch [^\n]*--solve seq[^\n]*\n)[^`]*```/, "$1```");
  const alteredCliFile = alteredCopy("cli.md", alteredCli);
  alteredDocs.push({ file: alteredCliFile, readme: false });

  it("a console block in the docs is run again: cli.md's --solve seq block with its output removed is stale", () => {
    expect(alteredCli).not.toBe(cliDoc);
    const stale = staleIn(alteredCliFile) ?? [];
    expect(stale).toHaveLength(1);
    expect(stale[0]).toContain("cli.md's block \"vramfit batch ");
    expect(stale[0]).toContain("--solve seq");
  });
});

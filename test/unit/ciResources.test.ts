// test/ciResources.ts: in CI the tests start before the venvs and the prebuilds are made (.ci/run), so every file that
// reads what they set must await them first, or it would find the variables unset and skip its checks quietly; and a
// file that bounds a time waits until they are all made.
import { readdirSync, readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ciResource } from "../ciResources.js";
import { ciResourceGroup } from "../slowestFirst.js";
import { root } from "../cli/runCli.js";

/** What a file reads, and the resource that sets it. */
const NEEDS: readonly [RegExp, string][] = [
  [/VRAMFIT_TORCH_CPU_PYTHON|torchCpuPython\.js/, "cpu"],
  [/VRAMFIT_TORCH_CUDA_PYTHON|VRAMFIT_CUDA_INCLUDE|findTorchWheel|findCudaInclude/, "cuda"],
  [/prebuildState\.js|VRAMFIT_PREBUILD_SKIP/, "prebuilds"],
  // A bound on a time: measured once the installs beside the first tests are over.
  [/(performance\.now\(\) - \w+|elapsedMs|afterSignalMs)\)\.toBeLessThan/, "settled"],
];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith(".test.ts") ? [join(dir, entry.name)] : [],
  );
}

describe("the resources CI makes beside the tests", () => {
  const saved = process.env.VRAMFIT_CI_RESOURCES;
  afterEach(() => {
    if (saved === undefined) delete process.env.VRAMFIT_CI_RESOURCES;
    else process.env.VRAMFIT_CI_RESOURCES = saved;
  });

  it("every test file that reads a venv's or the prebuilds' variables awaits that resource first", () => {
    const missing: string[] = [];
    let needing = 0;
    for (const file of testFiles(join(root, "test"))) {
      if (file.endsWith(join("unit", "ciResources.test.ts"))) continue;
      const text = readFileSync(file, "utf8");
      const awaited = new Set([...text.matchAll(/^await ciResource\("(\w+)"\);$/gm)].map((m) => m[1]));
      const needed = NEEDS.filter(([pattern]) => pattern.test(text)).map(([, resource]) => resource);
      if (needed.length > 0) needing += 1;
      for (const resource of needed) if (!awaited.has(resource)) missing.push(`${relative(root, file)}: ${resource}`);
    }
    expect(missing).toEqual([]);
    // The files .ci/run's comment names, and more: a pattern that stopped matching would pass the check above vacuously.
    expect(needing).toBeGreaterThanOrEqual(19);
  });

  it("waits for the resource's file, then sets its variables; outside CI it returns at once", async () => {
    delete process.env.VRAMFIT_CI_RESOURCES;
    await ciResource("cuda");
    const dir = mkdtempSync(join(tmpdir(), "vramfit-ci-resources-"));
    process.env.VRAMFIT_CI_RESOURCES = dir;
    let done = false;
    const waiting = ciResource("cpu").then(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(done).toBe(false);
    writeFileSync(join(dir, "cpu.env"), "VRAMFIT_TEST_CI_RESOURCE=/a/b=c\n\n");
    await waiting;
    expect(process.env.VRAMFIT_TEST_CI_RESOURCE).toBe("/a/b=c");
    delete process.env.VRAMFIT_TEST_CI_RESOURCE;
  });

  it("starts first the files that wait on nothing, then the others in the order what they wait on is made: the CPU venv, the CUDA venv, the prebuilds", () => {
    expect(ciResourceGroup("const a = 1;\n")).toBe(0);
    expect(ciResourceGroup('import x from "y";\nawait ciResource("cpu");\n')).toBe(1);
    expect(ciResourceGroup('await ciResource("cpu");\nawait ciResource("cuda");\n')).toBe(2);
    expect(ciResourceGroup('await ciResource("prebuilds");\nawait ciResource("cuda");\n')).toBe(3);
    expect(ciResourceGroup('  await ciResource("cuda");\n')).toBe(0); // only at a file's top level
    expect(ciResourceGroup(readFileSync(join(root, "test", "reference", "genuineAllocator.test.ts"), "utf8"))).toBe(2);
    expect(ciResourceGroup(readFileSync(join(root, "test", "cli", "gpuAll.test.ts"), "utf8"))).toBe(1);
    expect(ciResourceGroup(readFileSync(join(root, "test", "package", "pack.test.ts"), "utf8"))).toBe(3);
  });
});

// docs/api/ is generated from the TSDoc by typedoc (`npm run docs`) and committed, so it reads on
// GitHub; this fails when it is stale.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { root } from "../cli/runCli.js";

const out = mkdtempSync(join(tmpdir(), "vramfit-api-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("API reference", () => {
  it("docs/api matches the TSDoc (regenerate: npm run docs)", () => {
    const run = spawnSync(process.execPath, [join(root, "node_modules", "typedoc", "bin", "typedoc"), "--out", out, "--logLevel", "Error"], { cwd: root, encoding: "utf8" });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const committed = join(root, "docs", "api");
    expect(readdirSync(out).sort()).toEqual(readdirSync(committed).sort());
    for (const file of readdirSync(out)) {
      expect(readFileSync(join(committed, file), "utf8"), `docs/api/${file} is stale: run npm run docs`).toBe(readFileSync(join(out, file), "utf8"));
    }
  }, 120_000);

  it("documents each entry point of the library with an example", () => {
    const reference = readFileSync(join(root, "docs", "api", "README.md"), "utf8");
    for (const name of ["devices", "memGetInfo", "findMaxBatch", "checkFits", "planMemory"]) {
      const section = reference.split(`### ${name}()`)[1]?.split("\n### ")[0] ?? "";
      expect(section, name).toContain("#### Example");
    }
  });
});

// src/cli/longRun.ts: advice and `gpus --fit` run with V8's optimization budget raised, and put it back before
// bin/vramfit.js writes its code cache: V8 refuses a cache made under other flags than the next run starts with.
import { mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./runCli.js";

/** The one cache file in `cacheHome` and when it was written. */
function written(cacheHome: string): { name: string; mtimeMs: number } {
  const files = readdirSync(join(cacheHome, "vramfit"));
  expect(files).toHaveLength(1);
  return { name: files[0]!, mtimeMs: statSync(join(cacheHome, "vramfit", files[0]!)).mtimeMs };
}

describe("a long run's V8 budget", () => {
  // check (the whole command; with advice where the batch does not fit) and gpus --fit raise the budget for their work.
  const cases: [string, string[]][] = [
    ["check's advice", ["check", "--model", "resnet18", "--gpu", "T4", "--batch", "100000", "--json"]],
    ["a check that fits", ["check", "--model", "resnet18", "--gpu", "H100-80GB", "--batch", "8", "--json"]],
    ["gpus --fit", ["gpus", "--fit", "--model", "resnet18", "--min-batch", "100", "--json"]],
  ];
  for (const [what, args] of cases) {
    it(`leaves the code cache usable after ${what}: written once, then read (not refused and written again), with the same answer`, async () => {
      const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-longrun-"));
      const first = await runCli(args, { XDG_CACHE_HOME: cacheHome });
      const made = written(cacheHome);
      const second = await runCli(args, { XDG_CACHE_HOME: cacheHome });
      // bin/vramfit.js writes the cache again only where V8 refused it (or there was none).
      expect(written(cacheHome)).toEqual(made);
      expect(second.status).toBe(first.status);
      const answer = (stdout: string) => JSON.stringify(JSON.parse(stdout), (key, value: unknown) => (/elapsed|Ms$/.test(key) ? undefined : value));
      expect(answer(second.stdout)).toBe(answer(first.stdout));
      if (what === "check's advice") expect(JSON.parse(first.stdout)).toMatchObject({ fits: false, advice: expect.arrayContaining([expect.anything()]) });
      if (what === "a check that fits") expect(JSON.parse(first.stdout)).toMatchObject({ fits: true });
    });
  }
});

// The README's library example, run as a user would run it: shared by scripts/readme-examples.mjs
// (which writes its output into the README) and test/docs/readmeExample.test.ts (which compares).
import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { transpile } from "./run-ts.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The body of the README block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`, without its code fence. */
export function readmeBlock(readme, name) {
  const begin = `<!-- ${name}:begin -->`;
  const i = readme.indexOf(begin);
  const j = readme.indexOf(`<!-- ${name}:end -->`);
  if (i < 0 || j < i) throw new Error(`README.md lacks ${begin}`);
  return readme
    .slice(i + begin.length, j)
    .trim()
    .replace(/^```\w*\n/, "")
    .replace(/\n?```$/, "");
}

/** Runs TypeScript `code` (which imports "vramfit") with `env`; relative driver paths are taken from the package root. */
export async function runLibraryExample(code, env) {
  const file = await transpile(code, "readme-library-example");
  const run = spawnSync(process.execPath, [file], { cwd: root, env: { PATH: process.env.PATH, ...env }, encoding: "utf8" });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

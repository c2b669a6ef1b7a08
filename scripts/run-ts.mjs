#!/usr/bin/env node
// Runs a TypeScript example on Node 20, which cannot strip types: transpiles it with the project's
// TypeScript into build/ts-run/ (inside the package, so `import "vramfit"` resolves to this
// package's own dist/) and runs it with the remaining arguments.
//   npm run example -- examples/benchmark.ts --out bench.json
// Node ≥ 22.6 can run the examples directly: node --experimental-strip-types examples/benchmark.ts
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Transpiles TypeScript source to an ES module in build/ts-run/NAME.mjs and returns its path. */
export async function transpile(source, name) {
  const { default: ts } = await import("typescript");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
    fileName: `${name}.ts`,
  });
  const out = join(root, "build", "ts-run", `${name}.mjs`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, outputText);
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [file, ...args] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node scripts/run-ts.mjs FILE.ts [ARGS…]");
    process.exit(2);
  }
  const out = await transpile(readFileSync(file, "utf8"), basename(file, ".ts"));
  const run = spawnSync(process.execPath, [out, ...args], { stdio: "inherit" });
  process.exit(run.status ?? 1);
}

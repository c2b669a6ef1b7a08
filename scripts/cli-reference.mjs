#!/usr/bin/env node
// Prints the CLI options table as Markdown; `--write` replaces it in docs/cli.md between the markers.
import { readFileSync, writeFileSync } from "node:fs";
import { cliReferenceMarkdown } from "../dist/cli/reference.js";

const BEGIN = "<!-- cli-reference:begin -->";
const END = "<!-- cli-reference:end -->";
const table = cliReferenceMarkdown();
if (process.argv.includes("--write")) {
  const readme = readFileSync(new URL("../docs/cli.md", import.meta.url), "utf8");
  const start = readme.indexOf(BEGIN);
  const stop = readme.indexOf(END);
  if (start < 0 || stop < start) throw new Error(`docs/cli.md lacks the ${BEGIN} … ${END} markers`);
  writeFileSync(new URL("../docs/cli.md", import.meta.url), `${readme.slice(0, start + BEGIN.length)}\n${table}\n${readme.slice(stop)}`);
} else {
  process.stdout.write(`${table}\n`);
}

#!/usr/bin/env node
// Bundles the CLI (dist/cli/main.js, built by tsc, and commander) into one CommonJS file,
// dist/cli/vramfit.cjs, which bin/vramfit.js compiles through V8's code cache and runs. Why: Node 20 spends about a millisecond resolving, reading and linking
// each ES module, and the CLI is some 60 of them plus commander's 8; one file starts in about half
// the time (docs/benchmarks.md, "CLI cold start"). The source layout is untouched: the library
// (dist/index.js) stays tsc's one file per module, and the commands stay lazily imported, which
// the bundle keeps (each command's modules are initialised only when that command runs).
// The bundle lives in dist/cli/ like main.js, so the paths it computes from import.meta.url (the
// package's package.json, the addon in build/ and prebuilds/) are the same as in the unbundled CLI.
//   node scripts/bundle-cli.mjs        (part of `npm run build:ts`)
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";
import { minifySync } from "rolldown/utils";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const BUNDLE = join(root, "dist", "cli", "vramfit.cjs");

/** commander's licence travels with its code (MIT asks for the notice in copies). */
function commanderNotice() {
  const require = createRequire(join(root, "package.json"));
  // commander's exports hide its package.json: its main file sits at the package's top.
  const dir = dirname(require.resolve("commander"));
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const licence = readFileSync(join(dir, "LICENSE"), "utf8").trim();
  return `/*! vramfit's CLI in one file (scripts/bundle-cli.mjs); sources: src/cli/, src/.\n * Includes commander ${version}:\n${licence.replace(/^/gm, " * ")}\n */`;
}

/**
 * commander requires node:child_process at load, for subcommands that are separate executables,
 * which vramfit has none of; child_process brings net, dgram and streams, some 2 ms of every start.
 * Here it is required on first use instead. Fails the build if commander changes that line.
 */
const lazyChildProcess = {
  name: "vramfit:commander-lazy-child-process",
  transform(code, id) {
    if (!/[\\/]commander[\\/]lib[\\/]command\.js$/.test(id)) return null;
    const eager = "const childProcess = require('node:child_process');";
    if (!code.includes(eager)) throw new Error(`bundle-cli: commander's ${id} no longer has \`${eager}\`: update lazyChildProcess`);
    return code.replace(eager, "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };");
  },
};

/**
 * The CLI reads its version from package.json at every start, for `--version`: in the bundle it is
 * written in instead (the bundle is rebuilt with the package). Fails the build if main.js changes that call.
 */
const inlineVersion = {
  name: "vramfit:inline-version",
  transform(code, id) {
    if (!/[\\/]dist[\\/]cli[\\/]main\.js$/.test(id)) return null;
    const call = ".version(packageVersion())";
    if (!code.includes(call)) throw new Error(`bundle-cli: ${id} no longer has \`${call}\`: update inlineVersion`);
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    return code.replace(call, `.version(${JSON.stringify(version)})`);
  },
};

/**
 * rolldown hoists every `require("node:…")` to the top of the bundle, so each command would load
 * the Node modules of all of them (child_process and net for --exec, fs/promises, …), some
 * milliseconds. Each becomes a module object that requires on its first property read instead.
 * Fails the build if there are none, which would mean rolldown writes them differently now.
 */
function lazyBuiltins(text) {
  const hoisted = /^let (\w+) = require\("(node:[\w/]+)"\);$/gm;
  if (!hoisted.test(text)) throw new Error("bundle-cli: no hoisted require(\"node:…\") found: update lazyBuiltins");
  const helper = [
    "// Node's modules, required on first use (scripts/bundle-cli.mjs, lazyBuiltins).",
    "const __lazyBuiltin = (id) => { let m; const get = () => (m ??= require(id)); return new Proxy({}, { get: (_, key) => get()[key], has: (_, key) => key in get() }); };",
  ].join("\n");
  let first = true;
  return text.replace(hoisted, (_, name, id) => {
    const line = `let ${name} = __lazyBuiltin(${JSON.stringify(id)});`;
    if (!first) return line;
    first = false;
    return `${helper}\n${line}`;
  });
}

/**
 * In CommonJS output rolldown writes `import.meta.url` as `require("url").pathToFileURL(__filename).href`,
 * and the sources turn it back into a path (`fileURLToPath(import.meta.url)`, `createRequire(import.meta.url)`)
 * when the addon's module initialises, in every run that loads it: the URL made and parsed for
 * nothing, and Node's public `url` module prepared for it. For the bundle's own file, whose path
 * bin/vramfit.js passes already absolute and normalized, the round trip is `__filename` itself.
 * Fails the build if there is none, which would mean rolldown writes them differently now.
 */
function pathsNotUrls(text) {
  const url = 'require("url").pathToFileURL(__filename).href';
  const rewritten = text.replaceAll(`(0,node_url.fileURLToPath)(${url})`, "__filename").replaceAll(`(0,node_module.createRequire)(${url})`, "(0,node_module.createRequire)(__filename)");
  if (rewritten === text) throw new Error(`bundle-cli: no fileURLToPath(import.meta.url) written as ${url} found: update pathsNotUrls`);
  return rewritten;
}

/**
 * Non-ASCII characters (×, ≤, — in messages and comments) as \u escapes, which mean the same in
 * strings, templates, regular expressions, identifiers and comments: an ASCII file is read as
 * latin1 into a one-byte string, a few milliseconds less at every start than UTF-8 into two-byte.
 */
function asciiOnly(text) {
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

const bundle = await rolldown({
  input: join(root, "dist", "cli", "main.js"),
  platform: "node",
  // Node's own modules stay imports; everything else (commander included) goes in.
  external: [/^node:/],
  plugins: [lazyChildProcess, inlineVersion],
  logLevel: "warn",
});
// CommonJS: bin/vramfit.js compiles it with vm.Script, which takes V8's code cache (Node 20 has no
// compile cache for ES modules), and Node's CommonJS loader is lighter than its ES module loader.
const { output } = await bundle.generate({ format: "cjs", codeSplitting: false });
await bundle.close();
// Without comments and indentation: every start reads the file and V8 scans it, a third less work
// (docs/benchmarks.md). Names are kept, so a stack trace (VRAMFIT_DEBUG) still names functions;
// the sources are the readable form.
const { code: compact, errors } = minifySync("vramfit.cjs", lazyBuiltins(output[0].code), { compress: false, mangle: false, codegen: { removeWhitespace: true } });
if (errors.length > 0) throw new Error(`bundle-cli: ${errors[0].message}`);
// Already wrapped as Node wraps a CommonJS module: bin/vramfit.js compiles the file as it is read.
// Wrapping it there (module.wrap) made a second 520 KB string that V8 flattened while compiling,
// which filled the young generation and cost a scavenge at every start (0.4-5 ms, with the 0.5 MB
// string copied; docs/benchmarks.md, "Sixth round"). The file is a function expression, not a
// module to require: bin/vramfit.js is its only reader.
const code = asciiOnly(`(function (exports, require, module, __filename, __dirname) {${commanderNotice()}\n${pathsNotUrls(compact)}\n})`);
// The first line names the content, so a code cache made from another build is never used for this one.
const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
writeFileSync(BUNDLE, `// vramfit-cli ${hash}\n${code}`);

#!/usr/bin/env node
// The `vramfit` command: a thin shim over the CLI's run(), so the library holds all the logic.
// It runs dist/cli/vramfit.cjs, the CLI bundled into one file (scripts/bundle-cli.mjs), compiled
// with V8's code cache from the user's cache directory, so that starting the CLI costs little more
// than starting Node (docs/benchmarks.md, "CLI cold start"). CommonJS (bin/package.json), because
// an ES module entry would load Node's ES module loader, which costs a few milliseconds more.
"use strict";
const { closeSync, fstatSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } = require("node:fs");
const { dirname, join } = require("node:path");
const { Script } = require("node:vm");

const bundle = join(__dirname, "..", "dist", "cli", "vramfit.cjs");
const unbundled = join(__dirname, "..", "dist", "cli", "main.js"); // only in a checkout (tsc's output)
/**
 * Reads the open file `fd` of `size` bytes into the start of `buffer` and closes it: the bytes read.
 * The bundle and its code cache are read into one buffer, the cache after the bundle's text is
 * made from it: a buffer of half a megabyte is memory the process touches for the first time,
 * page by page, and a page fault costs 13-25 us on the microVMs this was measured on, so a
 * second buffer for the cache was ~100 faults more (docs/benchmarks.md, "Tenth round").
 */
function readAll(fd, size, buffer) {
  let read = 0;
  try {
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, null);
      if (n === 0) break;
      read += n;
    }
  } finally {
    closeSync(fd);
  }
  return buffer.subarray(0, read);
}

let source;
let buffer;
try {
  const fd = openSync(bundle, "r");
  const stats = fstatSync(fd);
  buffer = Buffer.allocUnsafe(stats.size);
  source = readAll(fd, stats.size, buffer).latin1Slice(); // ASCII only (scripts/bundle-cli.mjs): latin1 is the fast read
  // In a checkout, tsc alone leaves the bundle behind the sources: say so rather than run old code.
  if (statSync(unbundled, { throwIfNoEntry: false })?.mtimeMs > stats.mtimeMs) {
    process.stderr.write("vramfit: dist/cli/vramfit.cjs is older than dist/cli/main.js: run `npm run build:ts` to bundle the CLI again\n");
  }
} catch (error) {
  process.stderr.write(`vramfit: cannot read the CLI (${error.message}); in a checkout, run \`npm run build:ts\`\n`);
  process.exit(4);
}

/** FNV-1a, 32 bits, as hex: enough to tell a handful of Node binaries apart, and it needs no module. */
function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16);
}

/**
 * What this run's code cache is for: the command, the names of the options given, and the model
 * named. A cache holds the functions the run that made it compiled, and a cache made by another
 * kind of run leaves this one compiling the rest at every start: one made by `vramfit models` left
 * `batch` at 1.8x a bare Node's start against 1.6x with its own; one made by `batch --params ...`
 * left `batch --model resnet152` compiling its CNN plan, its searches and its table at every start
 * (docs/benchmarks.md, "Seventh round"). The options' values do not change which code runs, except
 * the model's (a CNN's plan and a transformer's are different code). The command is kept readable
 * in the name; the rest is a hash. Whatever is not a plain word shares one cache; a usage error
 * (exit 2) makes none, so a typo leaves no file behind.
 */
function cacheKey() {
  const args = process.argv.slice(2);
  const word = args.find((arg) => !arg.startsWith("-"));
  const command = word !== undefined && /^[a-z]{1,16}$/.test(word) ? word : "none";
  const names = new Set();
  let model = "";
  args.forEach((arg, i) => {
    if (!arg.startsWith("-")) return;
    const equals = arg.indexOf("=");
    const name = equals < 0 ? arg : arg.slice(0, equals);
    names.add(name);
    if (name === "--model") model = equals < 0 ? (args[i + 1] ?? "") : arg.slice(equals + 1);
  });
  return `${command}-${fnv1a(`${[...names].sort().join(" ")}\n${model}`)}`;
}

/**
 * Where this bundle's code cache lives: $XDG_CACHE_HOME/vramfit or ~/.cache/vramfit, one file per
 * build of the bundle (the hash on its first line), kind of run (cacheKey) and Node binary. V8 checks its own version
 * and flags before it takes a cache, but not which build of that version made it, and a cache from
 * another build can crash it (one from an arm64 Node does, in an x64 Node of the same version):
 * hence the binary's path, size and time in the name. Undefined where there is nowhere to put it.
 */
function cachePath() {
  const build = /^\/\/ vramfit-cli ([0-9a-f]+)\n/.exec(source)?.[1];
  if (build === undefined) return undefined;
  try {
    const node = statSync(process.execPath);
    const binary = fnv1a(`${process.execPath}:${node.size}:${node.mtimeMs}:${process.versions.v8}`);
    const base = process.env.XDG_CACHE_HOME || join(process.env.HOME || require("node:os").homedir(), ".cache");
    return join(base, "vramfit", `cli-${build}-${cacheKey()}-${process.version}-${process.arch}-${binary}.v8cache`);
  } catch {
    return undefined; // no home directory, say: run without a cache
  }
}

/**
 * At most this many caches are kept (200-600 KB each): every build × kind of run makes one, so a
 * checkout rebuilt all day would otherwise fill the directory (docs/install.md, "Files vramfit writes").
 * Room for the kinds of run scripts/bench.mjs times, for two builds side by side (--against).
 */
const MAX_CACHES = 32;

/**
 * Writes this build's cache, and prunes: caches written over a month ago go (other versions, other
 * Nodes; one still in use is written again on its next start), and beyond MAX_CACHES the oldest.
 * Only `cli-*.v8cache` files are touched. One that cannot be written is only slower.
 */
function saveCache(path, data) {
  try {
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const monthAgo = Date.now() - 30 * 24 * 3600 * 1000;
    const caches = readdirSync(dir)
      .filter((name) => name.startsWith("cli-") && name.endsWith(".v8cache"))
      .map((name) => ({ file: join(dir, name), mtimeMs: statSync(join(dir, name)).mtimeMs }))
      .sort((a, b) => b.mtimeMs - a.mtimeMs);
    caches.forEach(({ file, mtimeMs }, newer) => {
      if (mtimeMs < monthAgo || newer >= MAX_CACHES - 1) rmSync(file, { force: true });
    });
    const temporary = `${path}.${process.pid}`;
    writeFileSync(temporary, data, { mode: 0o600 });
    renameSync(temporary, path);
  } catch {
    // read-only or full: the next start compiles again
  }
}

const cacheFile = cachePath();
let cachedData;
try {
  if (cacheFile !== undefined) {
    const fd = openSync(cacheFile, "r");
    const { size } = fstatSync(fd);
    cachedData = readAll(fd, size, size <= buffer.length ? buffer : Buffer.allocUnsafe(size));
  }
} catch {
  // first run of this build with this Node
}
// The bundle is a function expression already (scripts/bundle-cli.mjs): no second copy to compile.
const script = new Script(source, { filename: bundle, cachedData });
const cli = { exports: {} };
// The bundle requires Node's own modules only (the addon through a require it makes itself), which
// any module's require loads alike: this file's, rather than one made for the bundle's path (1.1M
// instructions of `batch --params ...`, docs/benchmarks.md, "Tenth round").
script.runInThisContext()(cli.exports, require, cli, bundle, dirname(bundle));
cli.exports.run(process.argv.slice(2)).then(async (status) => {
  process.exitCode = status;
  // Made after the run, the cache holds every function this command compiled, not only the top level.
  if (cacheFile && status !== 2 && (cachedData === undefined || script.cachedDataRejected)) saveCache(cacheFile, script.createCachedData());
  // The answer is written (synchronously: src/cli/io.ts) and nothing is left on the event loop (a
  // stream still writing, a child, a timer): end now rather than tear the environment down, unless
  // a driver was loaded, whose contexts the addon's teardown hook releases (src/cli/main.ts, exitsAtOnce).
  if (process.getActiveResourcesInfo?.().length === 0 && (await cli.exports.exitsAtOnce())) process.exit();
});

// The package as users get it: packed, installed into an empty project from the tarball with no
// compiler on the PATH and nothing but the npm registry (or its cache), then used from the CLI,
// TypeScript, ESM and CommonJS. Also: where no prebuild loads and nothing can build, the install
// still succeeds and `vramfit info` says why and how to fix it.
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readmeBlock } from "../../scripts/readme-library-example.mjs";
import { transpile } from "../../scripts/run-ts.mjs";
import { root, simulator, spawnCollected, type CliRun as Run } from "../cli/runCli.js";
import { prebuildState, titled } from "./prebuildState.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("prebuilds");

// CUDASIM_CONTEXT_BYTES=0: free memory is then total − used to the byte (the figures below), as in test/cli/runCli.ts.
const H100 = { VRAMFIT_CUDA_LIBRARY: simulator, CUDASIM_DEVICES: "NVIDIA H100 80GB HBM3:85520809984:3221225472", CUDASIM_CONTEXT_BYTES: "0" };
const scratch = mkdtempSync(join(tmpdir(), "vramfit-pack-"));
const app = join(scratch, "app");
const installed = join(app, "node_modules", "vramfit");
const platform = `${process.platform}-${process.arch}`;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A PATH with node, npm, npx and sh only: no cc, c++, g++, make, cmake or python. */
function bareBin(): string {
  const bin = join(scratch, "bin");
  mkdirSync(bin);
  const npmCli = join(dirname(realpathSync(process.execPath)), "..", "lib", "node_modules", "npm", "bin");
  const npmDir = existsSync(npmCli) ? npmCli : dirname(realpathSync(spawnSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).stdout.trim()));
  symlinkSync(process.execPath, join(bin, "node"));
  symlinkSync(join(npmDir, "npm-cli.js"), join(bin, "npm"));
  symlinkSync(join(npmDir, "npx-cli.js"), join(bin, "npx"));
  symlinkSync("/bin/sh", join(bin, "sh")); // npm runs scripts with sh
  return bin;
}

let PATH = "";
function run(command: string, args: readonly string[], env: Record<string, string> = {}, cwd = app): Promise<Run> {
  // Only the npm cache and registry settings of this machine; no compiler can be found.
  const base = { PATH, HOME: process.env.HOME ?? scratch, npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? scratch, ".npm") };
  return spawnCollected(command, args, { cwd, env: { ...base, ...env } }).finished;
}
const npm = (args: readonly string[], env: Record<string, string> = {}) => run(join(PATH, "npm"), ["--no-audit", "--no-fund", "--prefer-offline", ...args], env);
const vramfit = (args: readonly string[], env: Record<string, string> = {}) => run(join(PATH, "npx"), ["--no-install", "vramfit", ...args], env);

let tarball = "";
let packedFiles: string[] = [];
let installRun: Run;

// The prebuilds come from `npm run build:prebuild` (CI runs it first; `npm pack` runs it as prepack).
const prebuilt = prebuildState();

beforeAll(async () => {
  // --ignore-scripts: prepare/prepack would rebuild dist/ under the other tests' feet; both are built already.
  const pack = spawnSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], { cwd: root, encoding: "utf8" });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stderr}`);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(scratch, info!.filename);
  packedFiles = info!.files.map((f) => f.path).sort();

  PATH = bareBin();
  mkdirSync(app);
  // npm ≥ 11 runs a dependency's install script only when the project allows it.
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module", allowScripts: { vramfit: true } }));
  installRun = await npm(["install", "--foreground-scripts", tarball]);
  if (installRun.status !== 0) throw new Error(`npm install failed:\n${installRun.stdout}\n${installRun.stderr}`);
}, 180_000);

describe("npm pack", () => {
  it("holds only what users need: the library's dist (no source maps), types, the bundled CLI and its bin, native sources, the prebuild, the tracer (python/vramfit_trace), README, LICENSE", () => {
    const allowed = [
      /^dist\/(?!cli\/).+\.(js|d\.ts)$/,
      /^dist\/cli\/vramfit\.cjs$/,
      /^bin\/(vramfit\.js|package\.json)$/,
      // Native sources, with what the build reads beside them (native/stubs: the CMake include and the lists of no-work entry points).
      /^native\/.+\.(cc|h|map|cmake|txt)$/,
      /^prebuilds\/[a-z0-9]+-[a-z0-9]+\/vramfit\.(node|json)$/,
      // Beside each prebuild, the simulated GPU's libraries (--exec … --gpu ID; test/package/prebuilds.test.ts lists them),
      // libnvidia-ml.so.1 among them: hence the hyphen.
      /^prebuilds\/[a-z0-9]+-[a-z0-9]+\/(libsimgpu\.so|stubs\/cuda\d+\/lib[A-Za-z][A-Za-z-]*\.so\.\d+)$/,
      /^scripts\/(install|build-native)\.mjs$/,
      /^python\/vramfit_trace\/[a-z_]+\.(py|cpp)$/,
      /^(CMakeLists\.txt|binding\.gyp|package\.json|README\.md|LICENSE)$/,
      // The docs the help text and README point at (issue 25: --spec's help named a file not shipped).
      /^docs\/.+\.md$/,
    ];
    expect(packedFiles.filter((f) => !allowed.some((pattern) => pattern.test(f)))).toEqual([]);
    for (const f of ["dist/index.js", "dist/index.d.ts", "dist/cli/vramfit.cjs", "bin/package.json", "native/addon/module.cc", "python/vramfit_trace/__main__.py", "python/vramfit_trace/fake_cuda.cpp", "CMakeLists.txt", "binding.gyp", "LICENSE", "README.md", "docs/memory-model.md", "docs/cli.md"]) {
      expect(packedFiles).toContain(f);
    }
    // Both prebuilds with what they need (their glibc floor is test/package/prebuilds.test.ts's).
    if (prebuilt.ready) for (const arch of ["x64", "arm64"]) expect(packedFiles).toEqual(expect.arrayContaining([`prebuilds/linux-${arch}/vramfit.node`, `prebuilds/linux-${arch}/vramfit.json`]));
    // Not the simulated driver's sources: the source build makes the addon only (scripts/install.mjs).
    // A clean dist: every module comes from a source file that still exists.
    const stale = packedFiles.filter((f) => f.startsWith("dist/") && f.endsWith(".js")).filter((f) => !existsSync(join(root, "src", f.slice(5).replace(/\.js$/, ".ts"))));
    expect(stale, "stale files in dist/: rm -rf dist && npm run build:ts").toEqual([]);
  });

  it("declares ESM exports with types first, a bin, engines, and an install hook that needs no devDependency", () => {
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(pkg.type).toBe("module");
    expect(Object.keys(pkg.exports["."])).toEqual(["types", "default"]);
    expect(pkg.bin).toEqual({ vramfit: "bin/vramfit.js" });
    expect(pkg.engines.node).toMatch(/^>=20/);
    // None: commander is bundled into the CLI, so an install fetches nothing but vramfit.
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.scripts.install).toBe("node scripts/install.mjs");
    expect(pkg.scripts.prepack).toBe("npm run build:prebuild");
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toMatch(/^MIT License/);
  });

  it("passes publint with nothing to fix", async () => {
    const { messages, pkg } = await publint({ pkgDir: installed, pack: false, level: "suggestion", strict: true });
    expect(messages.map((m) => `${m.type}: ${formatMessage(m, pkg)}`)).toEqual([]);
  });
});

describe("installed from the tarball with no compiler on the PATH", () => {
  it.skipIf(!prebuilt.ready)(titled("uses the prebuilt addon: the install hook finds it loads, and builds nothing", prebuilt), () => {
    expect(`${installRun.stdout}${installRun.stderr}`).toContain(`vramfit: native addon prebuilds/${platform}/vramfit.node`);
    expect(existsSync(join(installed, "build"))).toBe(false);
  });

  it.skipIf(!prebuilt.ready)(titled("npx vramfit info --json measures the simulated GPU through the prebuild", prebuilt), async () => {
    const result = await vramfit(["info", "--json"], H100);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const info = JSON.parse(result.stdout);
    expect(info).toMatchObject({ backend: "cuda", reason: null, driverVersion: "12.4" });
    expect(info.devices).toHaveLength(1);
    expect(info.devices[0]).toMatchObject({ ordinal: 0, name: "NVIDIA H100 80GB HBM3", totalBytes: 85_520_809_984, freeBytes: 82_299_584_512 });
  });

  it("type-checks a TypeScript consumer, the README's example and the examples against the published types", () => {
    const fixture = join(root, "test", "package", "fixture");
    for (const file of ["consumer.ts", "tsconfig.json"]) copyFileSync(join(fixture, file), join(app, file));
    writeFileSync(join(app, "readme-example.ts"), readmeBlock(readFileSync(join(root, "README.md"), "utf8"), "library-example"));
    // The folder's own .ts files, judged by the entry itself: a dot above the clone (CI's /tmp/tmp.XXXX)
    // must not matter, nor a subfolder of Python examples (examples/pytorch).
    const examples = join(root, "examples");
    cpSync(examples, join(app, "examples"), { recursive: true, filter: (f) => f === examples || f.endsWith(".ts") });
    mkdirSync(join(app, "node_modules", "@types"), { recursive: true });
    symlinkSync(join(root, "node_modules", "@types", "node"), join(app, "node_modules", "@types", "node"));
    const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", app], { cwd: app, encoding: "utf8" });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
    expect(readdirSync(join(app, "examples")).filter((f) => f.endsWith(".ts")).sort()).toEqual(["benchmark.ts", "launcher.ts"]);
    // tsc over the consumer and the examples: 37 s at load 16. The test waits on the compiler, not on a clock.
  }, 180_000);

  it.skipIf(!prebuilt.ready)(titled("runs the consumer as an ES module: devices, memGetInfo, findMaxBatch, checkFits, errors", prebuilt), async () => {
    const source = readFileSync(join(root, "test", "package", "fixture", "consumer.ts"), "utf8");
    const module = await transpile(source, "package-consumer");
    copyFileSync(module, join(app, "consumer.mjs"));
    const onGpu = await run(process.execPath, ["consumer.mjs"], H100);
    expect(onGpu.stderr).toBe("");
    expect(JSON.parse(onGpu.stdout)).toMatchObject({ backend: "cuda", gpus: ["NVIDIA H100 80GB HBM3"], freeBytes: 82_299_584_512, source: "device", nextFits: false, code: "ERR_UNKNOWN_GPU" });
    const noGpu = await run(process.execPath, ["consumer.mjs"], { VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" });
    expect(JSON.parse(noGpu.stdout)).toMatchObject({ backend: "none", gpus: [], freeBytes: null, source: "analytic", nextFits: false, code: "ERR_UNKNOWN_GPU" });
  });

  it("loads from CommonJS with require() where Node supports require(esm), and says so where it does not", async () => {
    copyFileSync(join(root, "test", "package", "fixture", "consumer.cjs"), join(app, "consumer.cjs"));
    const result = await run(process.execPath, ["consumer.cjs"]);
    const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
    const requireEsm = major > 22 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
    if (requireEsm) {
      expect(result.stderr).toBe("");
      expect(JSON.parse(result.stdout)).toEqual({ batchSize: expect.any(Number), source: "analytic" });
    } else {
      expect(result.stderr).toContain("ERR_REQUIRE_ESM");
    }
  });

  it("with no prebuild that loads and nothing to build with, install still succeeds and info says why and how to fix it", async () => {
    rmSync(join(installed, "prebuilds"), { recursive: true, force: true });
    const rebuild = await npm(["rebuild", "vramfit", "--foreground-scripts"]);
    expect(rebuild.status).toBe(0);
    expect(rebuild.stdout + rebuild.stderr).toContain(`vramfit: no native addon for ${platform}`);
    const result = await vramfit(["info", "--json"], H100);
    expect(result.status).toBe(0);
    const info = JSON.parse(result.stdout);
    expect(info.backend).toBe("none");
    expect(info.reason).toContain("native addon not found");
    // node-addon-api came with vramfit (an optional dependency); the tools did not.
    expect(info.reason).toMatch(/cmake-js: missing the cmake-js package, CMake, a C\+\+ compiler/);
    expect(info.reason).toContain("npm rebuild vramfit");
    // And it still answers, analytically.
    const batch = await vramfit(["batch", "--gpu", "H100-80GB", "--params", "7e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd", "--json"]);
    expect(batch.status).toBe(0);
    expect(JSON.parse(batch.stdout)).toMatchObject({ source: "analytic" });
  });

  it("rebuilds from source with node-gyp where a prebuild does not load (another arch's) and CMake is missing, from Node's own headers (no download)", async () => {
    rmSync(join(installed, "build"), { recursive: true, force: true });
    // A prebuild for another machine: an ELF header for arm64 (or x64 on arm64), which dlopen refuses.
    const elf = Buffer.alloc(64);
    elf.writeUInt32BE(0x7f454c46, 0);
    elf.set([2, 1, 1], 4); // 64-bit, little-endian, version 1
    elf.writeUInt16LE(3, 16); // ET_DYN
    elf.writeUInt16LE(process.arch === "arm64" ? 62 : 183, 18);
    mkdirSync(join(installed, "prebuilds", platform), { recursive: true });
    writeFileSync(join(installed, "prebuilds", platform, "vramfit.node"), elf);
    // This machine's PATH less cmake: a compiler, make and Python, as on a host without CMake.
    const noCmake = join(scratch, "no-cmake");
    mkdirSync(noCmake);
    for (const dir of (process.env.PATH ?? "").split(":")) {
      if (!dir || !existsSync(dir)) continue;
      for (const name of readdirSync(dir)) {
        if (name.startsWith("cmake") || existsSync(join(noCmake, name))) continue;
        symlinkSync(join(dir, name), join(noCmake, name));
      }
    }
    // node-addon-api is there already (an optional dependency of vramfit): nothing to add but a compiler.
    expect(existsSync(join(app, "node_modules", "node-addon-api", "napi.h"))).toBe(true);
    // CXXFLAGS=-O0 (after gyp's -O3 on the command line) only makes this test's compile faster.
    const rebuild = await run(join(noCmake, "npm"), ["rebuild", "vramfit", "--foreground-scripts"], { PATH: noCmake, CXXFLAGS: "-O0" });
    const output = rebuild.stdout + rebuild.stderr;
    expect(output).toContain(`vramfit: prebuilds/${platform}/vramfit.node does not load here (`);
    expect(output).toContain(`it is built for ${process.arch === "arm64" ? "x64" : "arm64"}, and this is ${process.arch}); building from source`);
    expect(output).toContain("vramfit: native addon built from source with node-gyp");
    expect(existsSync(join(installed, "build", "Release", "vramfit.node"))).toBe(true);
    expect(existsSync(join(installed, "build", "Release", "libcudasim.so"))).toBe(false); // only the addon
    expect(existsSync(join(installed, "build", "vramfit-install.json"))).toBe(false);
    const info = JSON.parse((await vramfit(["info", "--json"], H100)).stdout);
    expect(info).toMatchObject({ backend: "cuda", devices: [{ name: "NVIDIA H100 80GB HBM3" }] });
  }, 300_000);
});

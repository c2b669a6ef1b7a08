#!/usr/bin/env node
// Builds the addons shipped in the package (`npm run build:prebuild`, and `npm pack` as prepack):
// prebuilds/linux-x64/vramfit.node and prebuilds/linux-arm64/vramfit.node, each with a vramfit.json
// that says what it needs. Both are compiled by the GCC 10 of a Debian bullseye root
// (scripts/prebuild-root.mjs; the arm64 one by its aarch64 cross compiler) through cmake-js and the
// project's CMakeLists.txt, so every source listed there is built; libstdc++ and libgcc are linked
// in statically and the result is stripped. Then each is checked: `objdump -T` shows nothing above
// GLIBC_2.28 and no GLIBCXX_/CXXABI_ (scripts/prebuild-check.mjs), and it loads: the x64 one in
// this Node, the arm64 one in an arm64 Node under qemu-aarch64-static where that is installed.
// The simulated driver (libcudasim.so) is built alongside for each arch
// (build/prebuild-<arch>/Release), for test/package/prebuilds.test.ts; it is not packed. The
// simulated GPU's libraries (native/stubs: libcudart, libcublas, libcublasLt, libcudnn, libcuda, libnvidia-ml for
// CUDA 13 and 12) and their libsimgpu.so are packed, in prebuilds/<platform>/stubs, under the same floor. Incremental: a second run rebuilds what changed.
//   node scripts/prebuild.mjs [--arch x64,arm64]
// Needs root, debootstrap and Debian's archive the first time (the root is cached outside the clone).
// Exit status: 0 built and checked; 1 a build or a check failed; 3 this machine cannot make the root.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { onPath } from "./build-native.mjs";
import { GLIBC_FLOOR, floorViolations, symbolRequirements } from "./prebuild-check.mjs";
import { foreignNode } from "./prebuild-node.mjs";
import { BUILD_ROOT, ensureRoot, withRootMounts } from "./prebuild-root.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Each target: Node's arch name, CMake's processor, the root's compiler and strip. */
export const TARGETS = {
  x64: { processor: "x86_64", compiler: "/usr/bin/x86_64-linux-gnu-g++", strip: "/usr/bin/x86_64-linux-gnu-strip", qemu: undefined },
  arm64: { processor: "aarch64", compiler: "/usr/bin/aarch64-linux-gnu-g++", strip: "/usr/bin/aarch64-linux-gnu-strip", qemu: "qemu-aarch64-static" },
};

/** Where the build for `arch` and its simulated driver go. */
export const buildDir = (arch) => join(root, "build", `prebuild-${arch}`);

/**
 * A fingerprint of what the prebuilds are made from: native/, CMakeLists.txt and these scripts. The
 * tests compare it with prebuilds/<platform>/vramfit.json to tell a prebuild older than its sources.
 */
export function sourcesHash() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(join(root, "native"));
  for (const name of readdirSync(join(root, "scripts"))) if (/^prebuild.*\.mjs$/.test(name)) files.push(join(root, "scripts", name));
  files.push(join(root, "CMakeLists.txt"));
  const hash = createHash("sha256");
  for (const file of files.map((f) => relative(root, f).split(sep).join("/")).sort()) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update("\0");
  return hash.digest("hex").slice(0, 16);
}

/** Writes `text` to `path` unless it is there already: a rewritten toolchain file makes CMake and ninja rebuild everything. */
function writeIfChanged(path, text, mode) {
  let current;
  try {
    current = readFileSync(path, "utf8");
  } catch {
    // not written yet
  }
  if (current !== text) writeFileSync(path, text);
  if (mode !== undefined) chmodSync(path, mode);
}

/** A shell script that runs `program` of the root in the caller's directory (mounted at the same path there). */
function rootProgram(rootPath, program, path) {
  const script = [
    "#!/bin/sh",
    `# ${program} of ${rootPath}, in this directory (scripts/prebuild.mjs mounts the package at the same path there).`,
    "# -MMD for -MD: the root's system headers (/usr/include/c++/10/...) are not on this machine, and",
    "# ninja, which runs here, would find them missing and rebuild everything every time.",
    'for arg; do shift; if [ "$arg" = -MD ]; then set -- "$@" -MMD; else set -- "$@" "$arg"; fi; done',
    `exec chroot '${rootPath}' /usr/bin/env -i -C "$PWD" PATH=/usr/bin:/bin LC_ALL=C ${program} "$@"`,
    "",
  ].join("\n");
  writeIfChanged(path, script, 0o755);
}

/** Host directories the build reads: the package, and node-addon-api and node-api-headers if they live outside it. */
function directoriesToMount() {
  const require = createRequire(join(root, "package.json"));
  const outside = ["node-addon-api", "node-api-headers"]
    .map((name) => dirname(realpathSync(require.resolve(`${name}/package.json`))))
    .filter((dir) => !`${dir}${sep}`.startsWith(`${realpathSync(root)}${sep}`));
  return [realpathSync(root), ...new Set(outside)];
}

function compile(rootPath, arch) {
  const target = TARGETS[arch];
  const out = buildDir(arch);
  const tools = join(out, "toolchain");
  mkdirSync(tools, { recursive: true });
  const compiler = join(tools, "c++");
  rootProgram(rootPath, target.compiler, compiler);
  const toolchain = join(tools, "toolchain.cmake");
  writeIfChanged(
    toolchain,
    [
      "# Debian bullseye's GCC 10 in a root (scripts/prebuild.mjs): glibc 2.31 headers, old symbol versions.",
      "set(CMAKE_SYSTEM_NAME Linux)",
      `set(CMAKE_SYSTEM_PROCESSOR ${target.processor})`,
      `set(CMAKE_CXX_COMPILER "${compiler}")`,
      "",
    ].join("\n"),
  );
  const cmakeJs = createRequire(join(root, "package.json")).resolve("cmake-js/bin/cmake-js");
  // The addon, the simulated driver the gate test measures through it (not its NVML or legacy variants),
  // and the simulated GPU's libraries a PyTorch job loads (`--exec … --gpu ID`, native/stubs/stubs.cmake).
  for (const name of ["vramfit", "cudasim", "simulated_gpu_stubs"]) {
    const args = [
      cmakeJs,
      "compile",
      "--out",
      relative(root, out),
      "--target",
      name,
      "--parallel",
      String(availableParallelism()),
      `--CDCMAKE_TOOLCHAIN_FILE=${toolchain}`,
      // The C++ runtime goes into the .node (no GLIBCXX_ requirement), and the symbol table out.
      "--CDCMAKE_SHARED_LINKER_FLAGS=-static-libstdc++ -static-libgcc -s",
    ];
    const run = withRootMounts(rootPath, directoriesToMount(), process.execPath, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
    if (run.error || run.status !== 0) throw new Error(`cmake-js ${name} for ${arch} in ${rootPath} failed (${run.error?.message ?? `status ${run.status}`})`);
  }
  return join(out, "Release", "vramfit.node");
}

/** Loads `file` in a Node of its arch: this one for x64, an arm64 one under qemu; the reason when it cannot. */
export function loadCheck(rootPath, arch, file) {
  const probe = "const a = require(process.argv[1]); if (typeof a.loadDriver !== 'function') throw new Error('not vramfit\\'s addon'); console.log(process.arch)";
  let argv;
  if (arch === process.arch) argv = [process.execPath, "-e", probe, file];
  else {
    const qemu = TARGETS[arch].qemu;
    if (!qemu || !onPath(qemu)) return { loaded: false, skipped: `${qemu ?? "an emulator"} is not installed (apt-get install qemu-user-static)` };
    const node = foreignNode(arch);
    if (!node.ok) return { loaded: false, skipped: node.reason };
    argv = [qemu, "-L", join(rootPath, "usr", `${TARGETS[arch].processor}-linux-gnu`), node.path, "-e", probe, file];
  }
  const run = spawnSync(argv[0], argv.slice(1), { encoding: "utf8" });
  if (run.status !== 0 || run.stdout.trim() !== arch) return { loaded: false, error: `${run.stderr || run.error?.message || run.stdout}`.trim().split("\n")[0] };
  return { loaded: true };
}

/** The CUDA majors the simulated GPU's libraries are built for: one loader folder each (stubs/cuda<major>). */
export const STUB_MAJORS = [13, 12];

/**
 * Copies the simulated GPU's libraries next to the prebuild: stubs/cuda<major>/ (the loader folder
 * src/job/simulatedGpu.ts preloads from) and libsimgpu.so two folders above them, where their RPATH
 * ($ORIGIN/../..) finds it, as in build/Release. Returns the copied files, relative to `folder`.
 */
function shipStubs(arch, folder) {
  const built = join(buildDir(arch), "Release");
  const files = ["libsimgpu.so", ...STUB_MAJORS.flatMap((major) => readdirSync(join(built, "stubs", `cuda${major}`)).sort().map((name) => join("stubs", `cuda${major}`, name)))];
  for (const file of files) {
    mkdirSync(dirname(join(folder, file)), { recursive: true });
    copyFileSync(join(built, file), join(folder, file));
  }
  return files;
}

function prebuild(rootPath, arch, sources) {
  const built = compile(rootPath, arch);
  const destination = join(root, "prebuilds", `linux-${arch}`, "vramfit.node");
  mkdirSync(dirname(destination), { recursive: true });
  copyFileSync(built, destination);
  const stubs = shipStubs(arch, dirname(destination));
  // The same floor for every shipped library: a job's process loads the stubs beside its own glibc.
  for (const file of [destination, ...stubs.map((f) => join(dirname(destination), f))]) {
    const violations = floorViolations(file);
    if (violations.length > 0) throw new Error(`${relative(root, file)}: ${violations.join("; ")}`);
  }
  const { glibcMax } = symbolRequirements(destination);
  const load = loadCheck(rootPath, arch, destination);
  if (load.error) throw new Error(`${relative(root, destination)} does not load: ${load.error}`);
  const compilerVersion = spawnSync(join(buildDir(arch), "toolchain", "c++"), ["-dumpfullversion"], { encoding: "utf8" }).stdout.trim();
  const manifest = {
    platform: "linux",
    arch,
    libc: "glibc",
    // The newest glibc symbol version it needs: the loader compares it with the system's.
    glibc: glibcMax,
    floor: GLIBC_FLOOR,
    napi: 8,
    compiler: `g++ ${compilerVersion} (Debian ${BUILD_ROOT.suite}), libstdc++ and libgcc linked statically`,
    sources,
    // The simulated GPU's libraries (same floor), relative to this folder.
    simulatedGpu: stubs,
  };
  writeFileSync(join(dirname(destination), "vramfit.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const size = statSync(destination).size;
  const loaded = load.loaded ? "loads" : `not loaded here: ${load.skipped}`;
  console.log(`prebuild: ${relative(root, destination)}: ${(size / 1024).toFixed(0)} KiB, needs glibc ≥ ${glibcMax}, no GLIBCXX_/CXXABI_; ${loaded}`);
  const stubBytes = stubs.reduce((sum, f) => sum + statSync(join(dirname(destination), f)).size, 0);
  console.log(`prebuild: ${relative(root, dirname(destination))}: the simulated GPU's ${stubs.length} libraries (stubs/cuda${STUB_MAJORS.join(", cuda")}, libsimgpu.so), ${(stubBytes / 1024).toFixed(0)} KiB, none above GLIBC_${GLIBC_FLOOR}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { arch: { type: "string", default: Object.keys(TARGETS).join(",") } } });
  const arches = values.arch.split(",").filter(Boolean);
  const unknown = arches.filter((arch) => !(arch in TARGETS));
  if (unknown.length > 0) {
    console.error(`prebuild: --arch: expected x64 and/or arm64, got ${unknown.join(", ")}`);
    process.exit(2);
  }
  const made = ensureRoot();
  if (!made.ok) {
    // 3, not 1: nothing is wrong with the sources; this machine cannot make the root (.ci/run tells them apart).
    console.error(`prebuild: cannot build the prebuilds here: ${made.reason}`);
    process.exit(3);
  }
  const sources = sourcesHash();
  try {
    for (const arch of arches) prebuild(made.path, arch, sources);
  } catch (error) {
    console.error(`prebuild: ${error.message}`);
    process.exit(1);
  }
}

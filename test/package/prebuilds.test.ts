// The gate on the prebuilds (as node-pty's verify-glibc-requirements.sh): every packed .node needs
// nothing above GLIBC_2.28 and no GLIBCXX_/CXXABI_; the packed tarball installs with npm and runs
// `vramfit info --json` inside a Debian bullseye root (glibc 2.31) with this machine's Node copied
// in and no compiler on the PATH; a prebuild that needs a newer glibc is reported by `vramfit info`
// with the glibc found and required and the fix; and on linux-arm64, under qemu with the official
// arm64 Node, npm installs the tarball and the CLI measures an arm64 build of the simulated driver,
// an integrated (Jetson) GPU included. What cannot run here skips with the reason in its title.
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GLIBC_FLOOR, floorViolations, symbolRequirements } from "../../scripts/prebuild-check.mjs";
import { foreignNode } from "../../scripts/prebuild-node.mjs";
import { inRoot, withRootMounts } from "../../scripts/prebuild-root.mjs";
import { onPath } from "../../scripts/build-native.mjs";
import { root } from "../cli/runCli.js";
import { PREBUILT_ARCHES, prebuildState, titled } from "./prebuildState.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("prebuilds");
await ciResource("cuda");

const GiB = 2 ** 30;
const found = prebuildState();
const rootPath = found.ready ? found.rootPath : "";
const scratch = realpathSync(mkdtempSync(join(tmpdir(), "vramfit-prebuilds-")));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const H100 = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const GH200 = "NVIDIA GH200 480GB:102005473280:0";
const ORIN = `Jetson AGX Orin:${32 * GiB}:${GiB}:integrated=1`;
const MEMINFO_8GIB = join(root, "test", "fixtures", "meminfo", "8GiB-available.txt");
const simulator = (arch: string) => join(root, "build", `prebuild-${arch}`, "Release", "libcudasim.so");

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The tarball users get: `npm pack` of this tree (dist/ and prebuilds/ as built). */
let tarball = "";
let packed: string[] = [];
beforeAll(() => {
  const pack = spawnSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], { cwd: root, encoding: "utf8" });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stderr}`);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(scratch, info!.filename);
  packed = info!.files.map((f) => f.path);
}, 120_000);

const objdump = onPath("objdump");
describe("every packed .node: nothing above GLIBC_2.28, no GLIBCXX_ or CXXABI_ (objdump -T)", () => {
  it.skipIf(!found.ready || !objdump)(titled(objdump ? "linux-x64 and linux-arm64 are both in the tarball, and each meets the floor" : "objdump -T [skipped: objdump is not installed: apt-get install binutils]", found), () => {
    const nodes = packed.filter((f) => f.endsWith(".node")).sort();
    expect(nodes).toEqual(PREBUILT_ARCHES.map((arch) => `prebuilds/linux-${arch}/vramfit.node`).sort());
    for (const file of nodes) {
      const requirements = symbolRequirements(join(root, file));
      if (!requirements.ok) throw new Error(requirements.reason);
      // The report's objdump summary: each file's newest GLIBC_ version.
      console.log(`${file}: GLIBC_${requirements.glibcMax} at most (${requirements.glibc.map((v: string) => `GLIBC_${v}`).join(" ")}), C++ runtime: ${requirements.cxx.length === 0 ? "none" : requirements.cxx.join(" ")}`);
      expect(floorViolations(join(root, file)), file).toEqual([]);
      expect(requirements.glibcMax!.localeCompare(GLIBC_FLOOR, "en", { numeric: true }), file).toBeLessThanOrEqual(0);
      // What the loader is told the prebuild needs is what objdump reads.
      const manifest = JSON.parse(readFileSync(join(root, dirname(file), "vramfit.json"), "utf8")) as { glibc: string; floor: string };
      expect(manifest).toMatchObject({ glibc: requirements.glibcMax, floor: GLIBC_FLOOR });
    }
  });
});

// --- The simulated GPU's libraries (native/stubs), shipped beside each prebuild --------------------

/** What each prebuild folder carries for `--exec … --gpu ID` on a machine with no GPU (scripts/prebuild.mjs). */
const STUB_FILES = ["libsimgpu.so", ...[13, 12].flatMap((major) => [`libcublas.so.${major}`, `libcublasLt.so.${major}`, "libcuda.so.1", `libcudart.so.${major}`, "libcudnn.so.9", "libnvidia-ml.so.1"].map((name) => `stubs/cuda${major}/${name}`))];

describe("the simulated GPU's libraries ship in the prebuilds", () => {
  it.skipIf(!found.ready || !objdump)(titled("each arch carries the stubs of CUDA 13 and 12 and libsimgpu.so, with their sonames, none above GLIBC_2.28", found), () => {
    for (const arch of PREBUILT_ARCHES) {
      const folder = `prebuilds/linux-${arch}`;
      const shipped = packed.filter((f) => f.startsWith(`${folder}/`) && !/\/vramfit\.(node|json)$/.test(f)).map((f) => f.slice(folder.length + 1)).sort();
      expect(shipped, folder).toEqual([...STUB_FILES].sort());
      const manifest = JSON.parse(readFileSync(join(root, folder, "vramfit.json"), "utf8")) as { simulatedGpu: string[] };
      expect([...manifest.simulatedGpu].sort()).toEqual([...STUB_FILES].sort());
      for (const file of STUB_FILES) {
        const path = join(root, folder, file);
        expect(floorViolations(path), `${folder}/${file}`).toEqual([]);
        // The loader matches a preloaded library to torch's DT_NEEDED by soname: the file's name (libsimgpu.so's own).
        const soname = spawnSync("objdump", ["-p", path], { encoding: "utf8" }).stdout.match(/SONAME\s+(\S+)/)?.[1];
        expect(soname, `${folder}/${file}`).toBe(file.split("/").pop());
      }
    }
  });

  const cudaPython = process.env.VRAMFIT_TORCH_CUDA_PYTHON;
  const noTorch = cudaPython === undefined || cudaPython === "" ? { ready: false as const, reason: "VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)" } : found;
  it.skipIf(!noTorch.ready)(titled("the unpacked package (no build/) runs a PyTorch step on a simulated H100 with the prebuild's stubs", noTorch), () => {
    const unpacked = join(scratch, "unpacked");
    mkdirSync(unpacked);
    expect(spawnSync("tar", ["xzf", tarball, "-C", unpacked], { encoding: "utf8" }).status).toBe(0);
    const pkg = join(unpacked, "package");
    const job = `${cudaPython} ${join(root, "test", "fixtures", "simulated", "mlp_step.py")}`;
    const run = spawnSync(process.execPath, [join(pkg, "bin", "vramfit.js"), "check", "--exec", job, "--batch", "1", "--gpu", "H100-80GB", "--python", cudaPython!, "--json"], {
      cwd: scratch,
      env: { PATH: process.env.PATH ?? "", HOME: scratch, XDG_CACHE_HOME: join(scratch, "cache-unpacked") },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { source: string; fits: boolean; simulation: { gpu: string } };
    expect(answer).toMatchObject({ source: "simulated-gpu", fits: true, simulation: { gpu: "H100-80GB" } });
    // No build/ in a package: the stubs it ran on can only be the prebuild's (a missing folder is refused before any run).
    expect(spawnSync("ls", [join(pkg, "build")]).status).not.toBe(0);
  }, 180_000);
});

// --- Debian bullseye (glibc 2.31), x64 -----------------------------------------------------------

/**
 * A directory laid out for the root: Node copied in (bin/node, with its headers' prefix), npm
 * (mounted from this machine) and sh on a PATH with no compiler, an app, a cache.
 */
function bullseyeHome(name: string): { home: string; env: Record<string, string> } {
  const home = join(scratch, name);
  const bin = join(home, "bin");
  mkdirSync(join(home, "node", "bin"), { recursive: true });
  mkdirSync(bin);
  mkdirSync(join(home, "app"));
  copyFileSync(realpathSync(process.execPath), join(home, "node", "bin", "node"));
  symlinkSync(join(home, "node", "bin", "node"), join(bin, "node"));
  symlinkSync(join(npmDir(), "bin", "npm-cli.js"), join(bin, "npm"));
  symlinkSync("/bin/sh", join(bin, "sh")); // the root's sh: npm runs scripts with it
  writeFileSync(join(home, "app", "package.json"), JSON.stringify({ name: "consumer", private: true, allowScripts: { vramfit: true } }));
  const env = { PATH: bin, HOME: home, XDG_CACHE_HOME: join(home, "cache"), npm_config_cache: join(home, "npm-cache"), npm_config_update_notifier: "false" };
  return { home, env };
}

/** npm's own directory on this machine (mounted into the root at the same path). */
function npmDir(): string {
  const cli = realpathSync(spawnSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).stdout.trim());
  return dirname(dirname(cli));
}

/** Runs argv inside the bullseye root, in `cwd`, with exactly `env`; the scratch directory, this tree and npm mounted at their paths. */
function inBullseye(home: string, cwd: string, env: Record<string, string>, argv: string[]): Run {
  const [command, ...args] = inRoot(rootPath, cwd, env, argv);
  const run = withRootMounts(rootPath, [scratch, realpathSync(root), npmDir()], command!, args, { encoding: "utf8" });
  return { status: run.status, stdout: run.stdout ?? "", stderr: `${run.stderr ?? ""}${run.error?.message ?? ""}` };
}

describe("in a Debian bullseye root (glibc 2.31) with Node copied in, no compiler on the PATH", () => {
  it.skipIf(!found.ready)(titled("npm installs the tarball, the install hook picks prebuilds/linux-x64, and vramfit info --json measures the simulated GPU", found), () => {
    const { home, env } = bullseyeHome("x64");
    const app = join(home, "app");
    const glibc = inBullseye(home, app, env, ["node", "-p", "process.report.getReport().header.glibcVersionRuntime"]);
    expect(glibc.stdout.trim()).toBe("2.31");
    const install = inBullseye(home, app, env, ["npm", "install", "--offline", "--no-audit", "--no-fund", "--foreground-scripts", "--omit=optional", tarball]);
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toContain("vramfit: native addon prebuilds/linux-x64/vramfit.node");
    const vramfit = join(app, "node_modules", "vramfit", "bin", "vramfit.js");
    const info = inBullseye(home, app, { ...env, VRAMFIT_CUDA_LIBRARY: simulator("x64"), CUDASIM_DEVICES: H100 }, ["node", vramfit, "info", "--json"]);
    expect(info.stderr).toBe("");
    // The same device, and the same free memory, as this machine's own build reports.
    const here = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), "info", "--json"], { env: { PATH: process.env.PATH ?? "", VRAMFIT_CUDA_LIBRARY: join(root, "build", "Release", "libcudasim.so"), CUDASIM_DEVICES: H100 }, encoding: "utf8" });
    const [device] = (JSON.parse(here.stdout) as { devices: { uuid: string; freeBytes: number }[] }).devices;
    expect(JSON.parse(info.stdout)).toMatchObject({ backend: "cuda", reason: null, devices: [{ name: "NVIDIA H100 80GB HBM3", totalBytes: 85_520_809_984, uuid: device!.uuid, freeBytes: device!.freeBytes }] });
  }, 180_000);

  it.skipIf(!found.ready)(titled("a prebuild that needs a newer glibc: info names its error, glibc 2.31 against the one required, and the fix; analytic answers still work", found), () => {
    const { home, env } = bullseyeHome("old-glibc");
    const app = join(home, "app");
    const install = inBullseye(home, app, env, ["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional", tarball]);
    expect(install.status, install.stderr).toBe(0);
    // This machine's own build of the addon (glibc 2.36) stands for a prebuild made on too new a system.
    const installed = join(app, "node_modules", "vramfit");
    const hostBuilt = join(root, "build", "Release", "vramfit.node");
    const needs = symbolRequirements(hostBuilt);
    if (!needs.ok) throw new Error(needs.reason);
    copyFileSync(hostBuilt, join(installed, "prebuilds", "linux-x64", "vramfit.node"));
    writeFileSync(join(installed, "prebuilds", "linux-x64", "vramfit.json"), JSON.stringify({ glibc: needs.glibcMax, floor: GLIBC_FLOOR }));
    const hook = inBullseye(home, installed, env, ["node", "scripts/install.mjs"]);
    expect(hook.status).toBe(0);
    expect(hook.stderr).toMatch(/prebuilds\/linux-x64\/vramfit\.node: .*version `GLIBC(XX)?_[\d.]+' not found.*: this system has glibc 2\.31; the prebuild needs glibc 2\.3\d or newer/);
    const vramfit = join(installed, "bin", "vramfit.js");
    const info = inBullseye(home, app, { ...env, VRAMFIT_CUDA_LIBRARY: simulator("x64"), CUDASIM_DEVICES: H100 }, ["node", vramfit, "info"]);
    expect(info.status).toBe(0);
    const text = `${info.stdout}${info.stderr}`;
    expect(text).toMatch(/^backend {2}none: native addon does not load: /);
    expect(text).toContain(`this system has glibc 2.31; the prebuild needs glibc ${needs.glibcMax} or newer`);
    expect(text).toMatch(/version `GLIBC(XX)?_[\d.]+' not found/);
    expect(text).toContain("npm rebuild vramfit");
    expect(text).not.toMatch(/\n\s+at /); // no stack trace
    const batch = inBullseye(home, app, env, ["node", vramfit, "batch", "--gpu", "H100-80GB", "--params", "1e9", "--per-sample", "1GiB", "--json"]);
    expect(batch.status).toBe(0);
    expect(JSON.parse(batch.stdout)).toMatchObject({ source: "analytic" });
  }, 180_000);
});

// --- linux-arm64 under qemu ----------------------------------------------------------------------

const qemu = onPath("qemu-aarch64-static");
const armNode = found.ready && qemu ? foreignNode("arm64") : { ok: false as const, reason: qemu ? "no prebuilds" : "qemu-aarch64-static is not installed: apt-get install qemu-user-static" };
const armState = !found.ready ? found : armNode.ok ? found : { ready: false as const, reason: armNode.reason };

describe("linux-arm64 under qemu-aarch64-static, with the official arm64 Node and the root's arm64 glibc 2.31", () => {
  let armHome = "";
  let armEnv: Record<string, string> = {};
  let installRun: Run;
  beforeAll(() => {
    if (!armState.ready || !armNode.ok) return;
    // `node` on this PATH is the arm64 Node under qemu, so the install hook npm starts (`node scripts/install.mjs`, with
    // `node` found on this PATH: npm puts only node_modules/.bin folders and its node-gyp shim before it) runs as arm64
    // and picks by its own process.arch. npm itself runs in this machine's Node: nothing it does here depends on the
    // arch (--omit=optional), and emulated it took 20-66 s of CPU-bound qemu against 3-15 s in this Node
    // (scripts/arm64-npm-install-time.sh, nice -n 10, load 6-9).
    armHome = join(scratch, "arm64");
    const bin = join(armHome, "bin");
    mkdirSync(bin, { recursive: true });
    mkdirSync(join(armHome, "app"));
    writeFileSync(join(bin, "node"), `#!/bin/sh\nexec ${qemu} -L ${join(rootPath, "usr", "aarch64-linux-gnu")} ${armNode.path} "$@"\n`, { mode: 0o755 });
    writeFileSync(join(bin, "npm"), `#!/bin/sh\nexec ${realpathSync(process.execPath)} ${join(npmDir(), "bin", "npm-cli.js")} "$@"\n`, { mode: 0o755 });
    symlinkSync("/bin/sh", join(bin, "sh"));
    writeFileSync(join(armHome, "app", "package.json"), JSON.stringify({ name: "consumer", private: true, allowScripts: { vramfit: true } }));
    armEnv = { PATH: bin, HOME: armHome, XDG_CACHE_HOME: join(armHome, "cache"), npm_config_cache: join(armHome, "npm-cache"), npm_config_update_notifier: "false" };
    const run = spawnSync(join(bin, "npm"), ["install", "--offline", "--no-audit", "--no-fund", "--foreground-scripts", "--omit=optional", tarball], { cwd: join(armHome, "app"), env: armEnv, encoding: "utf8" });
    installRun = { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }, 300_000);

  const armCli = (args: string[], env: Record<string, string> = {}): Run => {
    const run = spawnSync(join(armHome, "bin", "node"), [join(armHome, "app", "node_modules", "vramfit", "bin", "vramfit.js"), ...args], { env: { ...armEnv, ...env }, encoding: "utf8" });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  };

  it.skipIf(!armState.ready)(titled("npm installs the tarball with no compiler, and the install hook picks prebuilds/linux-arm64", armState), () => {
    expect(installRun.status, installRun.stderr).toBe(0);
    expect(installRun.stdout).toContain("vramfit: native addon prebuilds/linux-arm64/vramfit.node");
  });

  it.skipIf(!armState.ready)(titled("vramfit info and a batch on a GH200 measure the arm64 simulated driver", armState), () => {
    const gpu = { VRAMFIT_CUDA_LIBRARY: simulator("arm64"), CUDASIM_DEVICES: GH200 };
    const info = armCli(["info", "--json"], gpu);
    expect(info.stderr).toBe("");
    expect(JSON.parse(info.stdout)).toMatchObject({ backend: "cuda", devices: [{ name: "NVIDIA GH200 480GB", totalBytes: 102_005_473_280 }] });
    const batch = armCli(["batch", "--params", "1e9", "--per-sample", "1GiB", "--json"], gpu);
    expect(batch.stderr).toBe("");
    const answer = JSON.parse(batch.stdout) as { source: string; batchSize: number; probes: number };
    expect(answer.source).toBe("device");
    expect(answer.probes).toBeGreaterThan(0);
    expect(answer.batchSize).toBeGreaterThan(0);
  }, 120_000);

  it.skipIf(!armState.ready)(titled("a Jetson's integrated memory: the budget is what the OS can give (MemAvailable), the same answer as on x64", armState), () => {
    // The case of test/cli/unusualDevices.test.ts: the driver says 31 GiB are free, /proc/meminfo 8 GiB.
    const args = ["batch", "--params", "1e8", "--per-sample", "256MiB", "--json"];
    const jetson = { CUDASIM_DEVICES: ORIN, VRAMFIT_PROC_MEMINFO: MEMINFO_8GIB };
    const run = armCli(args, { ...jetson, VRAMFIT_CUDA_LIBRARY: simulator("arm64") });
    expect(run.stderr).toBe("");
    const here = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), ...args], {
      env: { PATH: process.env.PATH ?? "", XDG_CACHE_HOME: join(armHome, "cache-x64"), ...jetson, VRAMFIT_CUDA_LIBRARY: join(root, "build", "Release", "libcudasim.so") },
      encoding: "utf8",
    });
    const x64 = JSON.parse(here.stdout) as { batchSize: number; budgetBytes: number; device: { freeBytes: number } };
    expect(x64.device.freeBytes).toBe(8 * GiB);
    expect(x64.budgetBytes).toBeLessThanOrEqual(8 * GiB);
    expect(JSON.parse(run.stdout)).toMatchObject({ source: "device", batchSize: x64.batchSize, budgetBytes: x64.budgetBytes, device: { freeBytes: 8 * GiB } });
  }, 120_000);
});

// --- The prebuilds' simulated GPU under an older glibc, in a program that is not PyTorch -----------

/** A C program on the stub runtime and cuBLAS, linked by the root's compiler without -pthread. */
const STUB_PROBE = `#include <stdio.h>
#include <stddef.h>
int cudaRuntimeGetVersion(int*); int cudaGetDeviceCount(int*); int cudaMalloc(void**, size_t); int cublasCreate_v2(void**);
int main(void) {
  int version = 0, count = 0; void *p = 0, *h = 0;
  cudaRuntimeGetVersion(&version);
  int e0 = cudaGetDeviceCount(&count), e1 = cudaMalloc(&p, 1 << 20), e2 = cublasCreate_v2(&h);
  printf("{\\"version\\": %d, \\"count\\": %d, \\"errors\\": [%d, %d, %d]}\\n", version, count, e0, e1, e2);
  return 0;
}
`;

describe("the prebuilds' simulated GPU libraries run in a program that does not load libpthread itself (glibc 2.31)", () => {
  // Their libstdc++ is linked in statically; before glibc 2.34 its std::mutex raised std::system_error ("Unknown error
  // -1") unless the process had loaded libpthread, which PyTorch does but a C program need not. They now need it.
  function probe(arch: "x64" | "arm64"): string {
    const stubs = join(root, "prebuilds", `linux-${arch}`, "stubs", "cuda13");
    writeFileSync(join(scratch, `probe-${arch}.c`), STUB_PROBE);
    const compiler = arch === "x64" ? "/usr/bin/gcc" : "/usr/bin/aarch64-linux-gnu-gcc";
    const out = join(scratch, `probe-${arch}`);
    const build = inBullseye(scratch, scratch, { PATH: "/usr/bin:/bin" }, [compiler, "-o", out, `${out}.c`, "-Wl,--no-as-needed", join(stubs, "libcudart.so.13"), join(stubs, "libcublas.so.13"), `-Wl,-rpath,${stubs}`]);
    expect(build.status, build.stderr).toBe(0);
    return out;
  }
  const expected = { version: 13000, count: 1, errors: [0, 0, 0] };

  it.skipIf(!found.ready)(titled("x64, inside the bullseye root", found), () => {
    const run = inBullseye(scratch, scratch, { CUDASIM_DEVICES: H100 }, [probe("x64")]);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(expected);
  }, 120_000);

  const armProbe = !found.ready ? found : qemu ? found : { ready: false as const, reason: "qemu-aarch64-static is not installed: apt-get install qemu-user-static" };
  it.skipIf(!armProbe.ready)(titled("arm64, under qemu with the root's arm64 glibc (a GH200)", armProbe), () => {
    const run = spawnSync(qemu!, ["-L", join(rootPath, "usr", "aarch64-linux-gnu"), probe("arm64")], { env: { PATH: process.env.PATH ?? "", CUDASIM_DEVICES: GH200 }, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(expected);
  }, 120_000);
});

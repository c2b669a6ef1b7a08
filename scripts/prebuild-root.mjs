// The Debian bullseye root the prebuilds are compiled in, and the way to run commands inside it.
// Why bullseye: its GCC 10 and glibc 2.31 produce an addon that needs nothing above GLIBC_2.17
// (arm64) or GLIBC_2.14 (x64) once libstdc++ and libgcc are linked statically, under the 2.28
// floor; buster (glibc 2.28) is no longer on Debian's main archive, and the machine's own
// toolchain (bookworm, glibc 2.36) gives GLIBC_2.34+ (docs/install.md, "How the binaries are built").
// The root is made once with debootstrap from Debian's archive and kept outside the clone,
// in $VRAMFIT_ROOTS or ~/.cache/vramfit/roots; it is remade when missing or when its package list
// changes. Needs root (debootstrap, chroot, mount namespaces), as on CI.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { onPath } from "./build-native.mjs";

/** The build root: compilers for x64 and arm64 against glibc 2.31, and the arm64 runtime libraries qemu needs. */
export const BUILD_ROOT = {
  name: "bullseye-amd64",
  suite: "bullseye",
  arch: "amd64",
  mirror: "http://deb.debian.org/debian",
  // g++ brings binutils and libstdc++6 (which a copied-in Node needs); the cross g++ brings
  // libc6-arm64-cross and libstdc++6-arm64-cross, the arm64 libraries qemu runs arm64 Node with.
  packages: ["g++", "g++-aarch64-linux-gnu"],
};

/** Where the roots are kept between runs (never inside the clone: the root is 1.4 GB). */
export function rootsDir() {
  if (process.env.VRAMFIT_ROOTS) return resolve(process.env.VRAMFIT_ROOTS);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "vramfit", "roots");
}

const STAMP = ".vramfit-root.json";

/** Why a root cannot be made or used here, or undefined when it can. */
export function rootUnavailable() {
  if (process.platform !== "linux") return `Debian roots need Linux (this is ${process.platform})`;
  if (typeof process.getuid === "function" && process.getuid() !== 0) return "making and entering a Debian root needs root (debootstrap, chroot, mount)";
  const absent = ["debootstrap", "chroot", "unshare", "mount"].filter((tool) => !onPath(tool, `${process.env.PATH ?? ""}:/usr/sbin:/sbin`));
  if (absent.length > 0) return `missing ${absent.join(", ")} (apt-get install debootstrap util-linux)`;
  return undefined;
}

/**
 * The root described by `spec`, made with debootstrap when missing or when made from another
 * package list. Returns its path, or the reason it cannot be had; never throws for that.
 * @returns {{ok: true, path: string} | {ok: false, reason: string}}
 */
export function ensureRoot(spec = BUILD_ROOT, log = (line) => console.error(line)) {
  const path = join(rootsDir(), spec.name);
  const wanted = { suite: spec.suite, arch: spec.arch, packages: spec.packages };
  try {
    const stamp = JSON.parse(readFileSync(join(path, STAMP), "utf8"));
    if (JSON.stringify(stamp.made) === JSON.stringify(wanted)) return { ok: true, path };
  } catch {
    // not made yet, or half made
  }
  const unavailable = rootUnavailable();
  if (unavailable) return { ok: false, reason: unavailable };
  const partial = `${path}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(rootsDir(), { recursive: true });
  log(`prebuild: making the ${spec.suite} root in ${path} with debootstrap (about a minute and 300 MB from ${spec.mirror})`);
  const debootstrap = spawnSync(
    "debootstrap",
    ["--variant=minbase", `--arch=${spec.arch}`, `--include=${spec.packages.join(",")}`, spec.suite, partial, spec.mirror],
    { encoding: "utf8", env: { ...process.env, PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin` } },
  );
  if (debootstrap.error || debootstrap.status !== 0) {
    const tail = `${debootstrap.stdout ?? ""}${debootstrap.stderr ?? ""}`.trim().split("\n").slice(-3).join(" | ");
    rmSync(partial, { recursive: true, force: true });
    return { ok: false, reason: `debootstrap ${spec.suite} failed: ${debootstrap.error?.message ?? tail}` };
  }
  // The downloaded .deb files are a third of the root and never needed again.
  rmSync(join(partial, "var", "cache", "apt", "archives"), { recursive: true, force: true });
  mkdirSync(join(partial, "var", "cache", "apt", "archives", "partial"), { recursive: true });
  writeFileSync(join(partial, STAMP), `${JSON.stringify({ made: wanted, at: new Date().toISOString() }, null, 2)}\n`);
  rmSync(path, { recursive: true, force: true });
  renameSync(partial, path);
  return { ok: true, path };
}

/**
 * Runs `command` on this machine in a private mount namespace where each of `binds` (absolute
 * host directories) also appears at the same path inside `root`, and /proc is mounted there.
 * The mounts vanish with the namespace, so nothing is left mounted however the command ends.
 * `command` itself runs outside the root; it enters it with `chroot` (see inRoot).
 */
export function withRootMounts(root, binds, command, args, options = {}) {
  const script = [
    'root="$1"; shift; count="$1"; shift',
    'while [ "$count" -gt 0 ]; do mkdir -p "$root$1" && mount --bind "$1" "$root$1" || exit 97; shift; count=$((count - 1)); done',
    'mkdir -p "$root/proc" && mount -t proc proc "$root/proc" || exit 97',
    'exec "$@"',
  ].join("\n");
  return spawnSync("unshare", ["--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", root, String(binds.length), ...binds, command, ...args], {
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20,
    ...options,
    env: { ...(options.env ?? process.env), PATH: `${(options.env ?? process.env).PATH ?? ""}:/usr/sbin:/sbin` },
  });
}

/** The argv that runs `argv` inside `root`, in `cwd`, with exactly `env` (a bare environment). */
export function inRoot(root, cwd, env, argv) {
  const assignments = Object.entries(env).map(([key, value]) => `${key}=${value}`);
  return ["chroot", root, "/usr/bin/env", "-i", ...assignments, "/usr/bin/env", "-C", cwd, ...argv];
}

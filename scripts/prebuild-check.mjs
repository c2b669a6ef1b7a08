// What a built .node asks of the system it loads on, read with `objdump -T`: the glibc symbol
// versions it needs (the floor is GLIBC_2.28) and any libstdc++ (GLIBCXX_) or C++ ABI (CXXABI_)
// version, which the prebuilds must not need (their C++ runtime is linked in). The same check as
// node-pty's verify-glibc-requirements.sh, used by scripts/prebuild.mjs and test/package/prebuilds.test.ts.
import { spawnSync } from "node:child_process";

/** The oldest glibc the prebuilds load on (RHEL/Rocky 8, Debian 10, Ubuntu 18.10 and later). */
export const GLIBC_FLOOR = "2.28";

/** -1, 0 or 1 as dotted version `a` is below, at or above `b`. */
export function compareVersions(a, b) {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * The versioned requirements in `objdump -T file`, or the reason they cannot be read.
 * @returns {{ok: true, glibc: string[], glibcMax: string | undefined, cxx: string[]} | {ok: false, reason: string}}
 */
export function symbolRequirements(file) {
  const run = spawnSync("objdump", ["-T", file], { encoding: "utf8", maxBuffer: 16 * 2 ** 20 });
  if (run.error) return { ok: false, reason: `objdump: ${run.error.message} (apt-get install binutils)` };
  if (run.status !== 0) return { ok: false, reason: `objdump -T ${file}: ${run.stderr.trim()}` };
  const glibc = [...new Set([...run.stdout.matchAll(/\bGLIBC_(\d+(?:\.\d+)+)\b/g)].map((m) => m[1]))].sort(compareVersions);
  const cxx = [...new Set([...run.stdout.matchAll(/\b(?:GLIBCXX|CXXABI)_[\d.]+\b/g)].map((m) => m[0]))].sort();
  return { ok: true, glibc, glibcMax: glibc.at(-1), cxx };
}

/** What in `file` breaks the floor, one phrase each; empty when nothing does. */
export function floorViolations(file, floor = GLIBC_FLOOR) {
  const found = symbolRequirements(file);
  if (!found.ok) return [found.reason];
  const above = found.glibc.filter((v) => compareVersions(v, floor) > 0).map((v) => `GLIBC_${v}`);
  return [...(above.length > 0 ? [`needs ${above.join(", ")} (above the GLIBC_${floor} floor)`] : []), ...(found.cxx.length > 0 ? [`needs ${found.cxx.join(", ")} (libstdc++ must be linked in)`] : [])];
}

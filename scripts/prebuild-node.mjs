// A Node binary for another architecture, to load the arm64 prebuild under qemu: the official
// build that the npm package node-linux-<arch>@<version> ships (the `node` package's platform
// binaries; the registry is the one place besides Debian's archive this project downloads from).
// Kept next to the roots ($VRAMFIT_ROOTS/../node), fetched with `npm pack` when missing.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { rootsDir } from "./prebuild-root.mjs";

/**
 * bin/node of Node `version` (default: this one) for `arch` ("arm64"), fetched once.
 * @returns {{ok: true, path: string} | {ok: false, reason: string}}
 */
export function foreignNode(arch, version = process.version.slice(1)) {
  const dir = join(dirname(rootsDir()), "node", `node-linux-${arch}-${version}`);
  const node = join(dir, "bin", "node");
  if (existsSync(node)) return { ok: true, path: node };
  mkdirSync(dirname(dir), { recursive: true });
  const scratch = mkdtempSync(`${dir}.partial-`);
  try {
    const spec = `node-linux-${arch}@${version}`;
    const pack = spawnSync("npm", ["pack", "--silent", "--no-audit", "--no-fund", spec], { cwd: scratch, encoding: "utf8" });
    const tarball = pack.stdout?.trim().split("\n").at(-1);
    if (pack.status !== 0 || !tarball) return { ok: false, reason: `npm pack ${spec} failed: ${(pack.stderr ?? pack.error?.message ?? "").trim().split("\n").at(-1)}` };
    const untar = spawnSync("tar", ["xzf", tarball, "package/bin/node", "package/LICENSE"], { cwd: scratch, encoding: "utf8" });
    if (untar.status !== 0) return { ok: false, reason: `${spec} has no package/bin/node: ${untar.stderr.trim()}` };
    chmodSync(join(scratch, "package", "bin", "node"), 0o755);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(scratch, "package"), dir);
    return { ok: true, path: node };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// .ci/python-envs.sh's pip plumbing, without making an environment (VRAMFIT_VENVS=none): which configured indexes pip is
// given, and the one warning per package that a local index lacking the package makes pip print, left out.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "../cli/runCli.js";

const scratch = mkdtempSync(join(tmpdir(), "vramfit-python-envs-"));

/** Runs `script` in bash after sourcing .ci/python-envs.sh with no environment to make, `pip` being `fakePip`. */
function withEnvsScript(script: string, fakePip: string) {
  const bin = mkdtempSync(join(scratch, "bin-"));
  writeFileSync(join(bin, "pip"), `#!/bin/sh\n${fakePip}\n`);
  chmodSync(join(bin, "pip"), 0o755);
  const source = `VRAMFIT_VENVS=none; source ${JSON.stringify(join(root, ".ci", "python-envs.sh"))}; ${script}`;
  return spawnSync("bash", ["-c", source], { encoding: "utf8", env: { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: scratch } });
}

describe(".ci/python-envs.sh", () => {
  it("gives pip the configured indexes, the first as --index-url, leaving out a local one whose folder is missing", () => {
    const here = join(scratch, "simple");
    mkdirSync(here);
    const config = `file:///nonexistent/vramfit/simple file://${here} https://pypi.example/simple`;
    const run = withEnvsScript("vramfit_pip_indexes", `[ "$1 $2" = "config get" ] && [ "$3" = global.extra-index-url ] && echo '${config}'`);
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: "" });
    expect(run.stdout.trim().split("\n")).toEqual(["--index-url", `file://${here}`, "--extra-index-url", "https://pypi.example/simple"]);
  });

  it("says there is none when every configured index is a missing folder", () => {
    const run = withEnvsScript("vramfit_pip_indexes; echo status $?", `[ "$3" = global.extra-index-url ] && echo file:///nonexistent/vramfit/simple`);
    expect(run.stdout).toBe("status 1\n");
  });

  it("runs pip less the warning for a package a local index lacks: pip's other lines and its status stay", () => {
    const pip = [
      `echo "WARNING: Location 'file:///opt/pypi-more/simple/pytest/' is ignored: it is neither a file nor a directory." >&2`,
      `echo "WARNING: Location 'file:///opt/pypi-more/simple/torch/' is ignored: it is neither a file nor a directory." >&2`,
      "echo 'ERROR: No matching distribution found for torch==9' >&2",
      "echo installed",
      "exit 3",
    ].join("\n");
    const run = withEnvsScript("vramfit_pip pip install torch==9; echo status $?", pip);
    expect(run.stderr).toBe("ERROR: No matching distribution found for torch==9\n");
    expect(run.stdout).toBe("installed\nstatus 3\n");
  });
});

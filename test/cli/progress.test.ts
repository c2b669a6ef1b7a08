// Progress on a real terminal (a pseudo-terminal from util-linux `script`): a line on stderr during
// long device work, in colour unless NO_COLOR; nothing with --json; nothing when stderr is a pipe.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { root, runCli, simulatedGpus } from "./runCli.js";

const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;
// Each touched probe synchronizes, and the simulated synchronize takes 700 ms: long work.
const slowGpus = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472;NVIDIA A100-SXM4-40GB:42505273344", { CUDASIM_SYNC_DELAY_MS: "700" });
const workload = ["--params", "1e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd"];
const CLEAR_LINE = "\r\x1b[2K";

/** Runs the CLI with stdin, stdout and stderr on a terminal; returns what the terminal received. */
function onTerminal(args: readonly string[], env: Record<string, string>): { status: number | null; screen: string } {
  const command = [process.execPath, `${root}/bin/vramfit.js`, ...args].map((a) => `'${a}'`).join(" ");
  const run = spawnSync("script", ["-qec", command, "/dev/null"], { env: { PATH: process.env.PATH ?? "", TERM: "xterm", ...env }, encoding: "utf8" });
  return { status: run.status, screen: run.stdout };
}

describe.runIf(hasScript)("progress on a terminal", () => {
  it("shows a line while a multi-device search probes, then clears it before the table", () => {
    const { status, screen } = onTerminal(["batch", "--device", "all", ...workload], slowGpus);
    expect(status).toBe(0);
    expect(screen).toContain(`${CLEAR_LINE}\x1b[36m`);
    expect(screen).toMatch(/\d probes? · device 0: allocating 7\d\.\d\d GiB in 3 allocations \(batch \d+\)/);
    expect(screen).toContain(`${CLEAR_LINE}workload  1000000000 parameters`); // cleared, then the results
    expect(screen).toContain("1: NVIDIA A100-SXM4-40GB  device");
  });

  it("has no colour under NO_COLOR, and is absent with --json", () => {
    const plain = onTerminal(["check", "--batch", "40", ...workload], { ...slowGpus, NO_COLOR: "1" });
    expect(plain.screen).toContain(`${CLEAR_LINE}⠋ 1 probe · device 0: allocating 47.45 GiB in 3 allocations (batch 40)`);
    expect(plain.screen).not.toMatch(/\x1b\[\d+m/);
    const json = onTerminal(["batch", "--device", "all", "--json", ...workload], slowGpus);
    expect(json.screen).not.toContain("\x1b");
    expect(JSON.parse(json.screen.replaceAll("\r", ""))).toHaveLength(2);
  });

  it("shows the validation run's step", () => {
    const command = [process.execPath, `${root}/scripts/gpu-validate.mjs`].map((a) => `'${a}'`).join(" ");
    const run = spawnSync("script", ["-qec", command, "/dev/null"], { env: { PATH: process.env.PATH ?? "", TERM: "xterm", NO_COLOR: "1", ...simulatedGpus("NVIDIA H100 80GB HBM3:85520809984", { CUDASIM_SYNC_DELAY_MS: "20" }) }, encoding: "utf8" });
    expect(run.stdout).toMatch(/\r\x1b\[2K⠋ validate: \d+\/\d+ [a-z ,0-9]+ · \d+ probes?/);
    expect(JSON.parse(run.stdout.slice(run.stdout.indexOf("{")).replaceAll("\r", ""))).toMatchObject({ pass: true });
  });
});

describe("progress when stderr is not a terminal", () => {
  it("writes nothing but the results", async () => {
    const result = await runCli(["batch", "--device", "all", ...workload], slowGpus);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).not.toMatch(/[\r\x1b]/);
  });
});

// Exit statuses mean what the README says (issue 13, item 5): a busy GPU does not fit (1), it is
// not bad input (2); a reader that went away ends the output quietly; a full disk is one line.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli, simulatedGpus, spawnCollected } from "./runCli.js";

// An H100 with 70 GiB of its 79.65 used by others: about 9.6 GiB free.
const BUSY_H100 = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:${70 * 2 ** 30}`);
const CLI = resolve(root, "bin", "vramfit.js");

describe("a reserve larger than the free memory", () => {
  it("check: does not fit, exit 1 (the Slurm prolog logged 'bad requirement' before)", async () => {
    const run = await runCli(["check", "--need", "1GiB", "--reserve", "20GiB", "--json"], BUSY_H100);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ fits: false, budgetBytes: 0 });
  });

  it("batch: does not fit, exit 1", async () => {
    const run = await runCli(["batch", "--params", "1e8", "--per-sample", "1GiB", "--reserve", "20GiB", "--json"], BUSY_H100);
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ batchSize: 0, budgetBytes: 0, source: "device" });
  });

  it("the prolog example refuses the job for what it is", async () => {
    const run = await spawnCollected("bash", [resolve(root, "examples", "slurm-prolog.sh"), "--need", "1GiB", "--reserve", "20GiB"], {
      env: { ...BUSY_H100, PATH: process.env.PATH ?? "", VRAMFIT: `${process.execPath} ${CLI}` },
    }).finished;
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/: refused: does not fit: needs 1.50 GiB of a 0 B budget on device 0/); // 1 GiB and the job's 512 MiB context
    expect(run.stderr).not.toMatch(/bad requirement/);
  });
});

describe("output that cannot be written", () => {
  it("a closed pipe (vramfit … | head -1) ends quietly, with the command's own status", async () => {
    const cli = spawnCollected(process.execPath, [CLI, "gpus", "--json"], { env: { PATH: process.env.PATH ?? "" } });
    cli.child.stdout.destroy(); // the reader is gone before vramfit writes a byte
    const run = await cli.finished;
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("a full disk (> /dev/full) is one line and exit 4, not a stack trace", async () => {
    const run = await spawnCollected("sh", ["-c", `exec "${process.execPath}" "${CLI}" models > /dev/full`]).finished;
    expect(run.stderr).toBe("vramfit: cannot write the results to stdout (ENOSPC: no space left on device, write)\n");
    expect(run.status).toBe(4);
  });
});

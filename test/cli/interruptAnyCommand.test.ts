// SIGINT and SIGTERM end any command within a second, not only probes (issue 13, item 1): a long
// analytic computation, a FIFO that never delivers. Exit 130/143, nothing on stdout (never half a
// table), one line on stderr; a second signal exits at once.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readlinkSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startCli, type Spawned } from "./runCli.js";

const dir = mkdtempSync(join(tmpdir(), "vramfit-interrupt-"));
// The largest transformer the limits allow: `gpus --fit --min-batch` on it computes for seconds.
const LARGEST = JSON.stringify({ kind: "transformer", hiddenSize: 4096, layers: 256, heads: 32, vocabSize: 32000, maxPositions: 4096, ffn: "gated", ffnSize: 11008, positions: "rotary" });
// The deepest CNN the limits allow (5,000 layers counted): each plan of its step is tens of thousands of tensors.
const DEEPEST_CNN = JSON.stringify({
  kind: "cnn",
  channels: 3,
  imageSize: 32,
  classes: 10,
  layers: Array.from({ length: 1666 }, () => [{ type: "conv", out: 64, kernel: 3, padding: 1 }, { type: "batchnorm" }, { type: "relu", inplace: true }]).flat(),
});
let fifos = 0;
function fifo(): string {
  const path = join(dir, `spec-${fifos++}.fifo`);
  execFileSync("mkfifo", [path]);
  return path;
}

/**
 * Resolves once the process has the FIFO open: its signal handlers are installed by then (run()
 * installs them before any command reads a file). No sleep: it waits for the state itself.
 * (/proc/PID/status cannot tell: Node catches SIGINT and SIGTERM from its start, to restore the
 * terminal before dying of them.)
 */
async function untilOpened(cli: Spawned, path: string): Promise<void> {
  const fds = `/proc/${cli.child.pid}/fd`;
  for (;;) {
    let names: string[];
    try {
      names = readdirSync(fds);
    } catch {
      throw new Error("the process ended before opening the FIFO");
    }
    if (names.some((fd) => { try { return readlinkSync(join(fds, fd)) === path; } catch { return false; } })) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Starts the CLI on a spec delivered through a FIFO, or (content undefined) one no one writes to, and signals it. */
async function interrupt(args: (spec: string) => string[], signal: "SIGINT" | "SIGTERM", content?: string) {
  const spec = fifo();
  const cli = startCli(args(spec));
  // Never leave a process behind when this test fails (it would have run for minutes, or forever).
  const reaper = setTimeout(() => cli.child.kill("SIGKILL"), 20_000);
  void cli.finished.finally(() => clearTimeout(reaper));
  if (content === undefined) {
    await untilOpened(cli, spec);
  } else {
    // Completes once the CLI has opened the FIFO and taken the spec; then it computes.
    await writeFile(spec, content);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  const sent = performance.now();
  cli.child.kill(signal);
  const run = await cli.finished;
  return { ...run, afterSignalMs: performance.now() - sent };
}

describe.each([
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)("%s", (signal, status) => {
  it(`ends gpus --fit --min-batch on the largest spec allowed (seconds of analytic work) with ${status}, within a second`, async () => {
    const run = await interrupt((spec) => ["gpus", "--fit", "--spec", spec, "--min-batch", "100000"], signal, LARGEST);
    expect({ status: run.status, signal: run.signal }).toEqual({ status, signal: null });
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`vramfit: interrupted by ${signal}\n`); // analytic work: no probe, so no claim that one freed its memory
    expect(run.afterSignalMs).toBeLessThan(1000);
  });

  it(`ends gpus --fit --min-batch on the deepest CNN allowed with ${status}, within a second`, async () => {
    const run = await interrupt((spec) => ["gpus", "--fit", "--spec", spec, "--min-batch", "100000"], signal, DEEPEST_CNN);
    expect({ status: run.status, signal: run.signal }).toEqual({ status, signal: null });
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`vramfit: interrupted by ${signal}\n`); // analytic work: no probe, so no claim that one freed its memory
    expect(run.afterSignalMs).toBeLessThan(1000);
  });

  it(`ends a wait on a FIFO no one writes to (blocked forever before) with ${status}, within a second`, async () => {
    const run = await interrupt((spec) => ["plan", "--spec", spec], signal);
    expect({ status: run.status, signal: run.signal }).toEqual({ status, signal: null });
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`vramfit: interrupted by ${signal}\n`); // analytic work: no probe, so no claim that one freed its memory
    expect(run.afterSignalMs).toBeLessThan(1000);
  });
});

describe("advice on the largest spec", () => {
  it("is interrupted between its measurements too", async () => {
    const run = await interrupt((spec) => ["batch", "--spec", spec, "--gpu", "T4", "--min-batch", "100000"], "SIGINT", LARGEST);
    expect(run.status).toBe(130);
    expect(run.stdout).toBe("");
    expect(run.afterSignalMs).toBeLessThan(1000);
  });
});

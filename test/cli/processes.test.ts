// Several vramfit processes on one GPU (a simulated device shared through CUDASIM_STATE): the
// per-device lock serializes their probes, so every answer is the one a lone process gets.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runJson, simulatedGpus, startCli, type CliRun } from "./runCli.js";

const H100_3GIB_USED = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const SEVEN_B_FP32_SGD = ["batch", "--params", "7e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd", "--json"];
const FREE = 85520809984 - 3221225472;

/** One simulated H100 that every process started with this environment shares. */
function sharedGpu(extra: Record<string, string> = {}): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "vramfit-shared-"));
  // A touched probe holds its memory through a 600 ms cuCtxSynchronize: long enough for the others to overlap.
  // A lock directory of its own, so that untilHeld sees this GPU's lock file only.
  return simulatedGpus(H100_3GIB_USED, { CUDASIM_STATE: join(dir, "ledger"), CUDASIM_SYNC_DELAY_MS: "600", VRAMFIT_LOCK_DIR: dir, ...extra });
}

/** Waits until some process holds the device's lock. */
async function untilHeld(env: Record<string, string>): Promise<void> {
  for (let i = 0; i < 1000; i += 1) {
    const names = readdirSync(env.VRAMFIT_LOCK_DIR!).filter((f) => f.startsWith("vramfit-"));
    if (names.length > 0 && readFileSync(join(env.VRAMFIT_LOCK_DIR!, names[0]!), "utf8").trim() !== "") return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`nobody took the lock in ${env.VRAMFIT_LOCK_DIR}`);
}

async function together(count: number, args: readonly string[], env: Record<string, string>): Promise<CliRun[]> {
  return Promise.all(Array.from({ length: count }, () => startCli(args, env).finished));
}

describe("4 concurrent vramfit batch processes on one GPU", () => {
  it("all answer, all answers are right (as alone: 20), none crash, and the memory is free afterwards", async () => {
    const env = sharedGpu();
    const runs = await together(4, SEVEN_B_FP32_SGD, env);
    for (const run of runs) {
      expect(run.status, run.stderr).toBe(0);
      const json = JSON.parse(run.stdout) as { batchSize: number; budgetBytes: number; probes: number };
      // As test/cli/batch.test.ts works out: free less the default 5% reserve, 20 samples; 20 and 21 probed.
      expect(json).toMatchObject({ batchSize: 20, budgetBytes: FREE - 4276040500, probes: 2 });
    }
    // Three of them had to wait, and said so.
    const waited = runs.filter((r) => /^another vramfit process \(pid \d+\) is probing this device; waiting up to 60 s \(--lock-timeout\)$/m.test(r.stderr));
    expect(waited.length).toBeGreaterThanOrEqual(1);
    const after = await runJson<{ devices: { freeBytes: number }[] }>(["info"], env);
    expect(after.json.devices[0]!.freeBytes).toBe(FREE);
  });

  it("(the same four without the lock, as when its directory is unusable, get wrong answers: the test above can fail)", async () => {
    // 1.5 s probes, so that even staggered start-ups on a loaded machine overlap.
    const runs = await together(4, SEVEN_B_FP32_SGD, sharedGpu({ VRAMFIT_LOCK_DIR: "/nonexistent/vramfit-locks", CUDASIM_SYNC_DELAY_MS: "1500" }));
    for (const run of runs) expect(run.stderr).toMatch(/^warning: cannot open the lock file .*: ENOENT.*; probing without the cross-process lock$/m);
    const answers = runs.map((r) => (r.status === 0 || r.status === 1 ? (JSON.parse(r.stdout) as { batchSize: number }).batchSize : -1));
    expect(answers.some((a) => a !== 20)).toBe(true);
  });
});

describe("--lock-timeout", () => {
  it("gives up after the bounded wait with exit 5 and one line naming the device and the holder", async () => {
    const env = sharedGpu({ CUDASIM_SYNC_DELAY_MS: "2500" });
    const holder = startCli(SEVEN_B_FP32_SGD, env);
    await untilHeld(env); // the holder has the lock and is in its probe
    const waiter = await startCli([...SEVEN_B_FP32_SGD, "--lock-timeout", "300ms"], env).finished;
    expect(waiter.status).toBe(5);
    expect(waiter.stdout).toBe("");
    const lines = waiter.stderr.trimEnd().split("\n");
    expect(lines).toEqual([
      `another vramfit process (pid ${holder.child.pid}) is probing this device; waiting up to 0.3 s (--lock-timeout)`,
      expect.stringMatching(new RegExp(`^vramfit: device 0 \\(GPU-[0-9a-f-]{36}\\) is being probed by another vramfit process \\(pid ${holder.child.pid}\\); gave up after 0\\.3 s \\(--lock-timeout\\)$`)),
    ]);
    expect((await holder.finished).status).toBe(0);
  });

  it("rejects a value that is not a duration", async () => {
    const run = await startCli(["batch", "--params", "1e9", "--per-sample", "1GiB", "--lock-timeout", "soon"], sharedGpu()).finished;
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toBe('vramfit: --lock-timeout: expected a duration such as 60 (seconds), 30s, 500ms, 2m or 1h, at most a day, got "soon"');
  });
});

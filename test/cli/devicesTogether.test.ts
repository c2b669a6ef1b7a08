// `--device all` on identical devices answers them together (src/fit/deviceGroup.ts): each device's answer and advice must be the one it gets asked alone, with the same driver calls made on it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runJson, simulatedGpus } from "./runCli.js";

const H100 = "NVIDIA H100 80GB HBM3:85520809984";
const logs = mkdtempSync(join(tmpdir(), "vramfit-together-"));
afterAll(() => rmSync(logs, { recursive: true, force: true }));

type Row = { elapsedMs?: number; device: { ordinal: number; uuid: string; freeBytes: number }; batchSize: number; budgetBytes: number; probes: number; advice: unknown[] };

/**
 * A run's JSON without its timings, and how many allocations the simulated driver charged to each
 * device (CUDASIM_MEMORY_LOG: one "charge pool=N" line per allocation a probe or context made).
 */
async function run(devices: string, args: readonly string[], name: string): Promise<{ rows: Row[]; charges: Map<number, number> }> {
  const log = join(logs, name);
  const { json } = await runJson<Row | Row[]>(args, simulatedGpus(devices, { CUDASIM_MEMORY_LOG: log }));
  const rows = (Array.isArray(json) ? json : [json]).map(({ elapsedMs: _, ...rest }) => rest);
  const charges = new Map<number, number>();
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const pool = / charge pool=(\d+) /.exec(line)?.[1];
    if (pool !== undefined) charges.set(Number(pool), (charges.get(Number(pool)) ?? 0) + 1);
  }
  return { rows, charges };
}

/** Every device asked with --device all equals that device asked alone: its row (answer, probes, advice) and its driver's allocations. */
async function expectEachAsAlone(devices: string, args: readonly string[], tag: string): Promise<Row[]> {
  const all = await run(devices, [...args, "--device", "all"], `${tag}-all`);
  const count = devices.split(";").length;
  expect(all.rows).toHaveLength(count);
  for (let ordinal = 0; ordinal < count; ordinal++) {
    const alone = await run(devices, [...args, "--device", String(ordinal)], `${tag}-${ordinal}`);
    expect(all.rows[ordinal], `device ${ordinal}`).toEqual(alone.rows[0]);
    // The same allocations on this device as alone (every probe was made on it), and none elsewhere alone.
    expect(all.charges.get(ordinal), `device ${ordinal}'s allocations`).toBe(alone.charges.get(ordinal));
    expect([...alone.charges.keys()]).toEqual([ordinal]);
  }
  return all.rows;
}

describe("--device all on identical devices", () => {
  it("eight identical H100s: each device's answer, probes and advice are the ones it gets asked alone, probed as often", async () => {
    const eight = Array.from({ length: 8 }, () => `${H100}:0`).join(";");
    const rows = await expectEachAsAlone(eight, ["batch", "--model", "llama-3.1-8b", "--seq", "4096"], "eight");
    expect(new Set(rows.map((r) => r.device.uuid)).size).toBe(8);
    expect(rows.every((r) => r.batchSize === 0 && r.probes > 0 && r.advice.length > 0)).toBe(true); // advice measured by probes on each
  }, 60_000);

  it("a device with other free memory gets its own answer and advice; the identical ones theirs", async () => {
    const three = `${H100}:0;${H100}:${40 * 2 ** 30};${H100}:0`;
    const rows = await expectEachAsAlone(three, ["batch", "--model", "llama-3.2-1b", "--seq", "2048", "--min-batch", "512"], "three");
    // The middle device has 40 GiB less free: a smaller budget and batch than its neighbours, which agree.
    expect(rows[1]!.device.freeBytes).toBe(rows[0]!.device.freeBytes - 40 * 2 ** 30);
    expect(rows[1]!.batchSize).toBeLessThan(rows[0]!.batchSize);
    expect(rows[2]!.batchSize).toBe(rows[0]!.batchSize);
    expect(rows[1]!.advice).not.toEqual(rows[0]!.advice);
  }, 60_000);
});

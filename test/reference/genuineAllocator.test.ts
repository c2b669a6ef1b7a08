// PyTorch's genuine CUDA caching allocator (torch 2.14.1's libc10_cuda.so, where the wheel lies, on
// vramfit's stub CUDA runtime) against vramfit's emulation, for every preset (issue 23 item 4):
//  1. without memory pressure, at three batches, the same cudaMalloc/cudaFree sequence;
//  2. at three capacities, the same largest batch: vramfit's analytic answer against the largest
//     batch the genuine allocator replays without running out of memory (searched from vramfit's
//     answer with vramfit's own search, so "largest" means the same boundary on both sides).
// Each under four PYTORCH_CUDA_ALLOC_CONF settings (see CONFIGS). VRAMFIT_GENUINE_REPORT=FILE
// writes the figures as the markdown table docs/validation.md shows.
import { writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

import { listPresets } from "../../src/index.js";
import { searchMaxBatch } from "../../src/fit/search.js";
import { emulatedReplay, emulatedReservedBytes, eventsLog, presetPlan, vramfitLargestBatch, type EmulatedReplay } from "./emulation.js";
import { DEVICE_BYTES, GenuineAllocator, buildHarness, findCudaInclude, findTorchWheel, type GenuineReplay, type TorchWheel } from "./genuineAllocator.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

/**
 * PyTorch's defaults; `max_split_size_mb:128` (blocks of 128 MiB or more are never split, so large
 * requests take their own segments: the setting PyTorch's out-of-memory message suggests against
 * fragmentation); `roundup_power2_divisions:4` (requests rounded up to quarter powers of two:
 * different block sizes, hence different segments); `expandable_segments:True` (one growing
 * segment per pool, pages mapped with the simulated driver's cuMemCreate/cuMemMap and unmapped on
 * the out-of-memory path; the device calls compared are the maps and unmaps). Not
 * `garbage_collection_threshold`, which acts only under setMemoryFraction (a replay never sets it).
 */
const CONFIGS: readonly (string | undefined)[] = [undefined, "max_split_size_mb:128", "roundup_power2_divisions:4", "expandable_segments:True"];
const BATCHES = [1, 8, 32];
const MiB = 2 ** 20;

const wheel = findTorchWheel(process.env.VRAMFIT_TORCH_CUDA_PYTHON);
const cudaInclude = findCudaInclude();
const skipReason =
  typeof wheel === "string" ? wheel : cudaInclude === undefined ? "no CUDA headers: set VRAMFIT_CUDA_INCLUDE (source .ci/python-envs.sh)" : undefined;
if (skipReason !== undefined) console.log(`genuine allocator reference skipped: ${skipReason}`);

const label = (conf: string | undefined) => conf ?? "default";

interface SequenceRow {
  name: string;
  batch: number;
  genuine: number[];
  emulated: number[];
}
interface LargestRow {
  name: string;
  capacityBytes: number;
  vramfit: number;
  genuine: number;
  genuineReplays: number;
  genuineAtAnswer?: GenuineReplay;
  emulatedAtAnswer?: EmulatedReplay;
}

describe.skipIf(skipReason !== undefined)("PyTorch's genuine caching allocator against vramfit's, every preset", () => {
  const presets = listPresets().map((p) => p.name);
  const sequences = new Map<string | undefined, SequenceRow[]>(CONFIGS.map((conf) => [conf, []]));
  const largest = new Map<string | undefined, LargestRow[]>(CONFIGS.map((conf) => [conf, []]));

  // Everything is replayed up front, in lanes side by side: one harness per configuration replaying every preset in
  // turn, except expandable segments, whose harness does most of the work (its pages mapped and unmapped one by one on
  // the simulated driver: one harness held the other three waiting at every preset, 124 s of this file's 126 at load
  // 6) and so gets two, each half the presets. Each events log is made once for all; the rows are put back in preset
  // order; the tests below judge the figures.
  beforeAll(async () => {
    const binary = buildHarness(wheel as TorchWheel, cudaInclude!);
    const plans = new Map<string, ReturnType<typeof presetPlan>>();
    const planOf = (name: string) => plans.get(name) ?? plans.set(name, presetPlan(name)).get(name)!;
    const logs = new Map<string, string>();
    const log = (name: string, batch: number) => logs.get(`${name} ${batch}`) ?? logs.set(`${name} ${batch}`, eventsLog(planOf(name), batch, name)).get(`${name} ${batch}`)!;
    const EXPANDABLE_LANES = 2;
    const lanes = CONFIGS.flatMap((conf) =>
      conf === "expandable_segments:True"
        ? Array.from({ length: EXPANDABLE_LANES }, (_, k) => ({ conf, names: presets.filter((_, at) => at % EXPANDABLE_LANES === k) }))
        : [{ conf, names: presets }],
    );
    const allocators = lanes.map((lane) => new GenuineAllocator(binary, wheel as TorchWheel, lane.conf));
    const order = (name: string, batch: number) => presets.indexOf(name) * BATCHES.length + BATCHES.indexOf(batch);
    const sequenceAt = new Map<SequenceRow, number>();
    const largestAt = new Map<LargestRow, number>();
    try {
      await Promise.all(lanes.map(async ({ conf, names }, lane) => {
        const allocator = allocators[lane]!;
        for (const name of names) {
          const plan = planOf(name);
          for (const batch of BATCHES) {
            const genuine = await allocator.replay(log(name, batch), 0);
            if (!genuine.fits) throw new Error(`${name} batch ${batch} ran out of ${DEVICE_BYTES} bytes (${label(conf)})`);
            const row = { name, batch, genuine: genuine.deviceCalls, emulated: emulatedReplay(plan, batch, Number.POSITIVE_INFINITY, conf).deviceCalls };
            sequences.get(conf)!.push(row);
            sequenceAt.set(row, order(name, batch));
          }
          // The capacities: what the emulation reserves with no limit at the three batches, to the
          // 2 MiB below: every preset meets all three, whatever its size.
          for (const batch of BATCHES) {
            const capacityBytes = Math.floor(emulatedReservedBytes(plan, batch) / (2 * MiB)) * 2 * MiB;
            const vramfit = await vramfitLargestBatch(plan, capacityBytes, conf);
            const replays = new Map<number, GenuineReplay>();
            const genuine = await searchMaxBatch(async (b) => {
              const replay = await allocator.replay(log(name, b), capacityBytes);
              replays.set(b, replay);
              return replay.fits;
            }, { seed: vramfit });
            // At the answer, under pressure: what each allocator did on the way (the out-of-memory path's frees).
            const atAnswer = replays.get(genuine.batchSize);
            const row: LargestRow = {
              name, capacityBytes, vramfit, genuine: genuine.batchSize, genuineReplays: genuine.evaluations,
              ...(atAnswer !== undefined && { genuineAtAnswer: atAnswer, emulatedAtAnswer: emulatedReplay(plan, genuine.batchSize, capacityBytes, conf) }),
            };
            largest.get(conf)!.push(row);
            largestAt.set(row, order(name, batch));
          }
        }
      }));
    } finally {
      for (const allocator of allocators) allocator.close();
    }
    for (const rows of sequences.values()) rows.sort((a, b) => sequenceAt.get(a)! - sequenceAt.get(b)!);
    for (const rows of largest.values()) rows.sort((a, b) => largestAt.get(a)! - largestAt.get(b)!);
    if (process.env.VRAMFIT_GENUINE_REPORT) writeFileSync(process.env.VRAMFIT_GENUINE_REPORT, reportTable(sequences, largest));
  }, 600_000);

  it("is torch 2.14.1's", () => {
    expect((wheel as TorchWheel).version).toMatch(/^2\.14\.1/);
  });

  for (const conf of CONFIGS) {
    it(`without memory pressure, the same cudaMalloc/cudaFree sequence (${label(conf)}; batches ${BATCHES.join(", ")})`, () => {
      const rows = sequences.get(conf)!;
      expect(rows).toHaveLength(presets.length * BATCHES.length);
      const disagreements = rows
        .filter((row) => !sameCalls(row.genuine, row.emulated))
        .map((row) => `${row.name} batch ${row.batch}: genuine ${row.genuine.length} calls (${sumMiB(row.genuine)} MiB), emulation ${row.emulated.length} (${sumMiB(row.emulated)} MiB)`);
      expect(disagreements).toEqual([]);
    });
  }

  for (const conf of CONFIGS) {
    it(`at three capacities, the same largest batch (${label(conf)})`, () => {
      const rows = largest.get(conf)!;
      expect(rows).toHaveLength(presets.length * BATCHES.length);
      const disagreements = rows
        .filter((row) => row.vramfit !== row.genuine)
        .map((row) => `${row.name} at ${row.capacityBytes / MiB} MiB: vramfit ${row.vramfit}, genuine ${row.genuine}`);
      expect(disagreements).toEqual([]);
    });
  }

  for (const conf of CONFIGS) {
    it(`at the largest batch, under that memory pressure, the same device calls, peaks and retries (${label(conf)})`, () => {
      const rows = largest.get(conf)!.filter((row) => row.genuineAtAnswer !== undefined);
      expect(rows.length).toBeGreaterThan(presets.length);
      // The out-of-memory path was taken somewhere: this compares more than the unconstrained replays do.
      expect(rows.some((row) => row.genuineAtAnswer!.numAllocRetries > 0 || row.genuineAtAnswer!.deviceCalls.some((bytes) => bytes < 0))).toBe(true);
      const disagreements = rows
        .filter(({ genuineAtAnswer: g, emulatedAtAnswer: e }) => !(e!.fits && sameCalls(g!.deviceCalls, e!.deviceCalls) && g!.peakAllocatedBytes === e!.peakAllocatedBytes && g!.peakReservedBytes === e!.peakReservedBytes && g!.numAllocRetries === e!.numAllocRetries))
        .map(({ name, capacityBytes, genuine, genuineAtAnswer: g, emulatedAtAnswer: e }) =>
          `${name} batch ${genuine} at ${capacityBytes / MiB} MiB: genuine ${g!.deviceCalls.length} calls, peaks ${g!.peakAllocatedBytes}/${g!.peakReservedBytes}, ${g!.numAllocRetries} retries; emulation ${e!.fits ? "" : "(out of memory) "}${e!.deviceCalls.length} calls, ${e!.peakAllocatedBytes}/${e!.peakReservedBytes}, ${e!.numAllocRetries}`);
      expect(disagreements).toEqual([]);
    });
  }
});

function sameCalls(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((bytes, k) => bytes === b[k]);
}

function sumMiB(calls: readonly number[]): number {
  return Math.round(calls.reduce((sum, bytes) => sum + bytes, 0) / MiB);
}

/** The figures as docs/validation.md shows them: one row per preset and configuration. */
function reportTable(sequences: Map<string | undefined, SequenceRow[]>, largest: Map<string | undefined, LargestRow[]>): string {
  const lines = [
    "| preset | PYTORCH_CUDA_ALLOC_CONF | same cudaMalloc/cudaFree (or map/unmap) sequence at batch 1, 8, 32 (genuine calls) | largest batch at three capacities: vramfit / genuine |",
    "|---|---|---|---|",
  ];
  for (const conf of CONFIGS) {
    const byPreset = new Map<string, { seq: string[]; big: string[] }>();
    for (const row of sequences.get(conf)!) {
      const entry = byPreset.get(row.name) ?? byPreset.set(row.name, { seq: [], big: [] }).get(row.name)!;
      entry.seq.push(`${sameCalls(row.genuine, row.emulated) ? "yes" : "**no**"} (${row.genuine.length})`);
    }
    for (const row of largest.get(conf)!) {
      const mark = row.vramfit === row.genuine ? "" : "**";
      byPreset.get(row.name)!.big.push(`${formatGiB(row.capacityBytes)}: ${mark}${row.vramfit} / ${row.genuine}${mark}`);
    }
    for (const [name, entry] of byPreset) lines.push(`| ${name} | ${label(conf)} | ${entry.seq.join(", ")} | ${entry.big.join("; ")} |`);
  }
  lines.push("");
  for (const conf of CONFIGS) {
    const atAnswer = largest.get(conf)!.filter((row) => row.genuineAtAnswer !== undefined);
    const retried = atAnswer.filter((row) => row.genuineAtAnswer!.numAllocRetries > 0).length;
    const freed = atAnswer.filter((row) => row.genuineAtAnswer!.deviceCalls.some((bytes) => bytes < 0)).length;
    lines.push(`- ${label(conf)}, at the answer (${atAnswer.length} replays that fit): ${retried} took the out-of-memory path's last retry (num_alloc_retries > 0), ${freed} gave device memory back on the way (cudaFree, or cuMemUnmap with expandable segments).`);
  }
  return `${lines.join("\n")}\n`;
}

function formatGiB(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(bytes < 10 * 2 ** 30 ? 2 : 0)} GiB`;
}

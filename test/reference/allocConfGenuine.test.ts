// torch 2.14.1's keys beyond the four the big comparison covers (genuineAllocator.test.ts), against PyTorch's genuine allocator:
// per_process_memory_fraction (the cap ⌊fraction × the device's total⌋), the garbage collection it
// enables (garbage_collection_threshold), large_segment_size_mb, the fraction with expandable
// segments (alloc_block tests the segment before pages are mapped), and which environment variable a
// job reads. For a few presets, on a simulated device sized to each (the fraction is of its total):
//  1. at two batches, with the whole device, the same cudaMalloc/cudaFree sequence, peaks and retries;
//  2. at three capacities, the same largest batch (vramfit's analytic answer, and the largest the
//     genuine allocator replays, searched from it with vramfit's own search as there).
// Kept small (CI's time): three presets, six configurations, one harness process per pair.
// VRAMFIT_ALLOC_CONF_REPORT=FILE writes the figures as the table docs/validation.md shows.
import { writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

import { allocConfFromEnvironment, allowedMemoryBytes, parseAllocConf } from "../../src/fit/allocConf.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { replayAtCapacity } from "../../src/fit/cachingAllocator.js";
import { searchMaxBatch } from "../../src/fit/search.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { EDGES, edgeEvents } from "./allocConfEdges.js";
import { emulatedCalls, eventsLog, presetPlan, type EmulatedReplay } from "./emulation.js";
import { GenuineAllocator, buildHarness, findCudaInclude, findTorchWheel, type GenuineReplay, type HarnessOptions, type TorchWheel } from "./genuineAllocator.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

const MiB = 2 ** 20;
const PRESETS = ["resnet18", "gpt2", "bert-base"];
/**
 * A fraction with a collection that starts at half of it; one with a late collection and
 * max_split_size_mb (release_available_cached_blocks on the way); a fraction alone, with a larger
 * segment for 1–10 MiB requests. Then the fraction with expandable segments: alone; with a
 * collection (which frees no expandable block) and 32 MiB segments and pages (the segment size the
 * fraction is tested with differs from the pages mapped); with max_split_size_mb.
 */
const CONFIGS = [
  "per_process_memory_fraction:0.5,garbage_collection_threshold:0.5",
  "per_process_memory_fraction:0.7,garbage_collection_threshold:0.8,max_split_size_mb:64",
  "per_process_memory_fraction:0.6,large_segment_size_mb:32",
  "expandable_segments:True,per_process_memory_fraction:0.5",
  "expandable_segments:True,per_process_memory_fraction:0.7,garbage_collection_threshold:0.5,large_segment_size_mb:32",
  "expandable_segments:True,per_process_memory_fraction:0.6,max_split_size_mb:64",
];
const BATCHES = [8, 24];
/** Each device's total: what the emulation reserves with no limit at this batch under PyTorch's defaults, so every fraction binds near the batches compared. */
const DEVICE_BATCH = 48;

const wheel = findTorchWheel(process.env.VRAMFIT_TORCH_CUDA_PYTHON);
const cudaInclude = findCudaInclude();
const skipReason =
  typeof wheel === "string" ? wheel : cudaInclude === undefined ? "no CUDA headers: set VRAMFIT_CUDA_INCLUDE (source .ci/python-envs.sh)" : undefined;
if (skipReason !== undefined) console.log(`allocator configuration reference skipped: ${skipReason}`);

/** What a replay did, in the harness's terms (cudaFree by the size of the segment it gives back). */
type Calls = EmulatedReplay;

/**
 * The emulation's replay of a preset's step at a capacity under a configuration on a device of
 * `deviceBytes`; `collect: false` drops the threshold, `fraction: false` the fraction's cap (for
 * the checks that they matter). With expandable segments the calls are maps and unmaps, by size.
 */
function emulated(name: string, batch: number, capacityBytes: number, conf: string, deviceBytes: number, { collect = true, fraction = true } = {}): Calls {
  const parsed = parseAllocConf(conf);
  const modelled = collect ? parsed : { ...parsed, garbageCollectionThreshold: 0 };
  const allowedBytes = fraction ? allowedMemoryBytes(parsed, deviceBytes) : Number.POSITIVE_INFINITY;
  return emulatedCalls(allocationTrace(presetPlan(name), batch), capacityBytes, modelled, allowedBytes);
}

interface Row {
  name: string;
  conf: string;
  deviceBytes: number;
  sequences: { batch: number; genuine: GenuineReplay; emulated: Calls; withoutCollection: Calls; withoutFraction: Calls }[];
  largest: { capacityBytes: number; vramfit: number; genuine: number }[];
}

describe.skipIf(skipReason !== undefined)("torch 2.14.1's memory fraction, garbage collection and large segments against vramfit's", () => {
  const rows: Row[] = [];
  const fromEnvironment: { env: Record<string, string>; genuine: number[]; emulated: number[] }[] = [];

  let binary = "";

  beforeAll(async () => {
    binary = buildHarness(wheel as TorchWheel, cudaInclude!);
    const start = (conf: string | undefined, options: HarnessOptions) => new GenuineAllocator(binary, wheel as TorchWheel, conf, options);
    for (const name of PRESETS) {
      const plan = presetPlan(name);
      const unconstrained = replayAtCapacity(allocationTrace(plan, DEVICE_BATCH), Number.POSITIVE_INFINITY).reservedPeakBytes;
      const deviceBytes = Math.ceil(unconstrained / (2 * MiB)) * 2 * MiB;
      const logs = new Map<number, string>();
      const log = (batch: number) => logs.get(batch) ?? logs.set(batch, eventsLog(plan, batch, name)).get(batch)!;
      await Promise.all(CONFIGS.map(async (conf) => {
        const allocator = start(conf, { deviceBytes });
        try {
          const row: Row = { name, conf, deviceBytes, sequences: [], largest: [] };
          for (const batch of BATCHES) {
            row.sequences.push({
              batch, genuine: await allocator.replay(log(batch), 0), emulated: emulated(name, batch, deviceBytes, conf, deviceBytes),
              withoutCollection: emulated(name, batch, deviceBytes, conf, deviceBytes, { collect: false }), withoutFraction: emulated(name, batch, deviceBytes, conf, deviceBytes, { fraction: false }),
            });
          }
          // The whole device (the fraction decides), and two capacities below the fraction's cap
          // (the device decides, the collection still runs against the cap).
          const allowed = allowedMemoryBytes(parseAllocConf(conf), deviceBytes);
          for (const capacityBytes of [deviceBytes, Math.floor((0.85 * allowed) / (2 * MiB)) * 2 * MiB, Math.floor((0.6 * allowed) / (2 * MiB)) * 2 * MiB]) {
            const parsed = parseAllocConf(conf);
            const vramfit = (await analyticMaxBatch(plan, capacityBytes, { kind: parsed.expandableSegments ? "expandable" : "pytorch", contextBytes: 0, conf: parsed, allowedBytes: allowed })).batchSize;
            const genuine = await searchMaxBatch(async (b) => (await allocator.replay(log(b), capacityBytes)).fits, { seed: vramfit });
            row.largest.push({ capacityBytes, vramfit, genuine: genuine.batchSize });
          }
          rows.push(row);
        } finally {
          allocator.close();
        }
      }));
    }
    // Which variable a job reads: a 3 MiB request's segment is large_segment_size_mb where it is read.
    const request = "a 1 3145728\n";
    const environments: Record<string, string>[] = [{ PYTORCH_ALLOC_CONF: "large_segment_size_mb:40" }, { PYTORCH_ALLOC_CONF: "large_segment_size_mb:40", PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:100" }, { PYTORCH_ALLOC_CONF: "large_segment_size_mb:40", PYTORCH_CUDA_ALLOC_CONF: "" }];
    for (const env of environments) {
      const allocator = start(undefined, { env });
      try {
        const genuine = (await allocator.replay(request, 0)).deviceCalls;
        const chosen = allocConfFromEnvironment(env);
        const conf = chosen === undefined ? undefined : parseAllocConf(chosen.text);
        const replay = replayAtCapacity([{ kind: "alloc", tensor: 1, bytes: 3 * MiB }], Number.POSITIVE_INFINITY, conf, { segments: true });
        fromEnvironment.push({ env, genuine, emulated: replay.segmentLog! });
      } finally {
        allocator.close();
      }
    }
    if (process.env.VRAMFIT_ALLOC_CONF_REPORT) writeFileSync(process.env.VRAMFIT_ALLOC_CONF_REPORT, reportTable(rows));
  }, 120_000);

  it("without a capacity of the device's own, the same cudaMalloc/cudaFree sequence, peaks and retries under each fraction", () => {
    expect(rows).toHaveLength(PRESETS.length * CONFIGS.length);
    const disagreements = rows.flatMap((row) => row.sequences
      .filter(({ genuine: g, emulated: e }) => !(g.fits === e.fits && g.failedAt === e.failedAt && sameCalls(g.deviceCalls, e.deviceCalls) && g.peakAllocatedBytes === e.peakAllocatedBytes && g.peakReservedBytes === e.peakReservedBytes && g.numAllocRetries === e.numAllocRetries))
      .map(({ batch, genuine: g, emulated: e }) => `${row.name} batch ${batch} (${row.conf}, device ${row.deviceBytes / MiB} MiB): genuine ${g.fits ? "fits" : `fails at ${g.failedAt}`}, ${g.deviceCalls.length} calls, ${g.numAllocRetries} retries; emulation ${e.fits ? "fits" : `fails at ${e.failedAt}`}, ${e.deviceCalls.length} calls, ${e.numAllocRetries} retries`));
    expect(disagreements).toEqual([]);
  });

  it("the garbage collection is what some of those sequences hang on: segments freed with no retry, which the emulation without it does not make", () => {
    const collecting = rows.filter((row) => parseAllocConf(row.conf).garbageCollectionThreshold > 0).flatMap((row) => row.sequences);
    const collected = collecting.filter(({ genuine }) => genuine.numAllocRetries === 0 && genuine.deviceCalls.some((bytes) => bytes < 0));
    expect(collected.length).toBeGreaterThan(0);
    expect(collected.some(({ genuine, withoutCollection }) => !sameCalls(genuine.deviceCalls, withoutCollection.deviceCalls))).toBe(true);
  });

  it("with expandable segments the fraction is what the sequences hang on: without its test the emulation maps past the cap where the genuine allocator stops", () => {
    const expandable = rows.filter((row) => parseAllocConf(row.conf).expandableSegments).flatMap((row) => row.sequences);
    expect(expandable).toHaveLength(PRESETS.length * 3 * BATCHES.length);
    const differing = expandable.filter(({ genuine, withoutFraction }) => !(genuine.fits === withoutFraction.fits && sameCalls(genuine.deviceCalls, withoutFraction.deviceCalls)));
    expect(differing.length).toBeGreaterThan(0);
    // Where the genuine allocator ran out, it ran out under its own cap: the device (its whole total) had room.
    expect(expandable.some(({ genuine, withoutFraction }) => !genuine.fits && withoutFraction.fits)).toBe(true);
  });

  it("at three capacities, the same largest batch", () => {
    const disagreements = rows.flatMap((row) => row.largest
      .filter((entry) => entry.vramfit !== entry.genuine)
      .map((entry) => `${row.name} (${row.conf}) at ${entry.capacityBytes / MiB} MiB of ${row.deviceBytes / MiB}: vramfit ${entry.vramfit}, genuine ${entry.genuine}`));
    expect(disagreements).toEqual([]);
    // The fraction decided somewhere: on the whole device the answer is below what the device alone allows.
    expect(rows.some((row) => row.largest[0]!.genuine < DEVICE_BATCH)).toBe(true);
  });

  it("the fraction's edges with expandable segments and the collection's ages, worked by hand, are the genuine allocator's and the emulation's", async () => {
    const answers = await Promise.all(EDGES.map(async (edge) => {
      const allocator = new GenuineAllocator(binary, wheel as TorchWheel, edge.conf, { deviceBytes: edge.totalMiB * MiB });
      try {
        const events = edgeEvents(edge);
        const genuine = await allocator.replay(events.map((e) => (e.kind === "alloc" ? `a ${e.tensor} ${e.bytes}\n` : `f ${e.tensor}\n`)).join(""), 0);
        const parsed = parseAllocConf(edge.conf);
        const emulation = emulatedCalls(events, Number.POSITIVE_INFINITY, parsed, allowedMemoryBytes(parsed, edge.totalMiB * MiB));
        return { why: edge.why, expected: [edge.fits, edge.callsMiB], genuine: [genuine.fits, genuine.deviceCalls.map((bytes) => bytes / MiB)], emulation: [emulation.fits, emulation.deviceCalls.map((bytes) => bytes / MiB)] };
      } finally {
        allocator.close();
      }
    }));
    for (const answer of answers) {
      expect(answer.genuine, answer.why).toEqual(answer.expected);
      expect(answer.emulation, answer.why).toEqual(answer.genuine);
    }
  });

  it("reads PYTORCH_CUDA_ALLOC_CONF over PYTORCH_ALLOC_CONF as the genuine allocator does", () => {
    expect(fromEnvironment.map((entry) => entry.genuine)).toEqual([[40 * MiB], [20 * MiB], [20 * MiB]]);
    for (const entry of fromEnvironment) expect(entry.emulated, JSON.stringify(entry.env)).toEqual(entry.genuine);
  });
});


function sameCalls(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((bytes, k) => bytes === b[k]);
}

/** The figures as docs/validation.md shows them: one row per preset and configuration. */
function reportTable(rows: readonly Row[]): string {
  const lines = [
    "| preset (device) | PYTORCH_CUDA_ALLOC_CONF | same calls, peaks, retries at batch 8, 24 (genuine: calls; fits or fails; segments the collection freed) | largest batch at three capacities: vramfit / genuine |",
    "|---|---|---|---|",
  ];
  const rank = (row: Row) => PRESETS.indexOf(row.name) * CONFIGS.length + CONFIGS.indexOf(row.conf);
  for (const row of [...rows].sort((a, b) => rank(a) - rank(b))) {
    const sequences = row.sequences.map(({ genuine: g, emulated: e }) => {
      const same = g.fits === e.fits && g.failedAt === e.failedAt && sameCalls(g.deviceCalls, e.deviceCalls) && g.peakAllocatedBytes === e.peakAllocatedBytes && g.peakReservedBytes === e.peakReservedBytes && g.numAllocRetries === e.numAllocRetries;
      const collected = g.numAllocRetries === 0 ? g.deviceCalls.filter((bytes) => bytes < 0).length : 0;
      return `${same ? "yes" : "**no**"} (${g.deviceCalls.length}; ${g.fits ? "fits" : "fails"}; ${collected})`;
    });
    const largest = row.largest.map((entry) => `${entry.capacityBytes / MiB} MiB: ${entry.vramfit === entry.genuine ? "" : "**"}${entry.vramfit} / ${entry.genuine}${entry.vramfit === entry.genuine ? "" : "**"}`);
    lines.push(`| ${row.name} (${row.deviceBytes / MiB} MiB) | ${row.conf} | ${sequences.join(", ")} | ${largest.join("; ")} |`);
  }
  return `${lines.join("\n")}\n`;
}

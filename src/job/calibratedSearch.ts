// The search over real runs: calibrated from two runs' peaks (or seeded by the memory model), then
// verified and, on a miss, galloped and bisected by the one search vramfit has (fit/search.ts).
import { VramfitError } from "../errors.js";
import { searchMaxBatch } from "../fit/search.js";
import type { JobRun } from "./runJob.js";

/**
 * How far the model may be from a measured peak before it is no longer trusted: 10 %, the
 * tolerance its activation figures are tested to against PyTorch (docs/memory-model.md, "Checked
 * against PyTorch"). A real job adds what the model leaves out (allocator caching, library
 * workspaces), so a larger gap means the model does not describe this job.
 */
export const MODEL_RELATIVE_ERROR = 0.1;

/**
 * The second calibration batch is doubled while the peak does not grow; past this batch a peak
 * that still has not grown means the job ignores the batch size (a real one grows by a 2 MiB page
 * by then unless a sample takes under 512 bytes), and the search stops rather than run forever.
 */
export const NO_GROWTH_LIMIT = 4096;

/**
 * How far a measured peak may be from the job's affine memory through rounding alone: one 20 MiB
 * segment, PyTorch's kLargeBuffer (c10/cuda/CUDACachingAllocator.cpp), the largest unit its
 * caching allocator rounds a request to; the 2 MiB pages of cuMemAlloc are smaller.
 */
export const PEAK_UNCERTAINTY_BYTES = 20 * 2 ** 20;

/** The memory model's view of the job, when a workload was described. */
export interface ModelSeed {
  /** The largest batch the model allows in the budget. */
  batchSize: number;
  /** The device bytes the model expects at a batch size. */
  bytesAt(batch: number): number;
  /** How far a measured peak may be from bytesAt before calibrating (default MODEL_RELATIVE_ERROR). */
  relativeError?: number;
}

export interface CalibratedSearchOptions {
  /** What the job may use: free memory less the reserve (the smallest over its devices). */
  budgetBytes: number;
  maxBatch?: number;
  /** The two calibration batches; default 1, then the largest batch the first run's peak proves safe. */
  calibrate?: readonly [number, number];
  model?: ModelSeed;
  signal?: AbortSignal;
}

export interface Calibration {
  batches: [number, number];
  fixedBytes: number;
  perSampleBytes: number;
  /** The line through B1 and a run far from it (the prediction's own, or a cautious one where that ran out of memory): the search starts from its prediction. */
  refinement?: { batch: number; fixedBytes: number; perSampleBytes: number; predictedBatchSize: number };
}

export interface CalibratedSearchResult {
  batchSize: number;
  trace: JobRun[];
  calibration?: Calibration;
  /** The batch the calibration (or the model) predicted and the search started from; null when neither could. */
  predictedBatchSize: number | null;
  /** How the answer was reached: `model` (its seed held), `calibration`, or `search` (no usable peaks). */
  method: "model" | "calibration" | "search";
  /**
   * The model's seed, its bytes there and the measured peak, whether they agreed, and where the
   * search started when the measured peak moved the model's answer.
   */
  model?: { batchSize: number; bytes: number; measuredBytes: number | null; agreed: boolean; correctedBatchSize?: number };
}

export type BatchRunner = (batch: number) => Promise<JobRun>;

/**
 * Finds the largest batch whose run fits, running each batch at most once.
 *
 * Without a model: run B1 (default 1); run B2 (default ⌊budget / peak(B1)⌋, the largest batch
 * that peak(B1) proves safe when memory is affine in the batch, at least B1 + 1); from the two
 * peaks, fixed + perSample × b; predict ⌊(budget − fixed) / perSample⌋; then the search verifies
 * the prediction and the next batch (four runs when it is right, three when B2 is the answer).
 * With a model: run the model's answer first; if it fits and its peak is within the model's error,
 * the search goes on from it (two runs when the model is exact); otherwise calibrate.
 */
export async function calibratedSearch(run: BatchRunner, options: CalibratedSearchOptions): Promise<CalibratedSearchResult> {
  const cap = options.maxBatch ?? Number.MAX_SAFE_INTEGER;
  const trace: JobRun[] = [];
  const known = new Map<number, JobRun>();
  /** Bytes per sample once the calibration (or an agreeing model) has measured it: later runs must follow it. */
  let slope: number | undefined;
  const runAt = async (batch: number): Promise<JobRun> => {
    const cached = known.get(batch);
    if (cached !== undefined) return cached;
    options.signal?.throwIfAborted();
    const result = await run(batch);
    known.set(batch, result);
    trace.push(result);
    if (options.maxBatch === undefined) checkGrowth(result);
    return result;
  };
  /**
   * Stops the search when a run's peak no longer follows the measured slope: two fitting runs whose
   * peaks are equal within the allocator's rounding, at batches the slope puts far apart. A job
   * that caps its batch (`min(batch, len(dataset))`) would otherwise fit at every batch up to
   * 2^53 − 1, each run a real training step.
   */
  const checkGrowth = (r: JobRun): void => {
    const bytes = r.fits ? deviceBytes(r) : null;
    if (slope === undefined || bytes === null) return;
    for (const other of known.values()) {
      const otherBytes = other.fits && other !== r ? deviceBytes(other) : null;
      if (otherBytes === null) continue;
      const [low, high] = other.batch < r.batch ? [{ batch: other.batch, bytes: otherBytes }, { batch: r.batch, bytes }] : [{ batch: r.batch, bytes }, { batch: other.batch, bytes: otherBytes }];
      const expected = slope * (high.batch - low.batch);
      if (expected >= 4 * PEAK_UNCERTAINTY_BYTES && high.bytes - low.bytes <= 2 * PEAK_UNCERTAINTY_BYTES) {
        throw new VramfitError(
          "ERR_JOB_UNMEASURED",
          `the job's peak stopped growing with the batch: ${low.bytes} bytes at batch ${low.batch}, ${high.bytes} at batch ${high.batch}, ` +
            `where ${Math.round(slope)} bytes per sample add ${Math.round(expected)}: it may cap its batch size (e.g. min(batch, len(dataset))); ` +
            "give --max-batch to search anyway",
        );
      }
    }
  };
  /**
   * A run's device bytes for the calibration: its peak, and where that came from the job's own
   * line (torch.cuda.max_memory_reserved() leaves out the CUDA context), plus the most NVML has
   * seen above such a line in any run.
   */
  const deviceBytes = (r: JobRun): number | null => {
    if (r.peakBytes === null || r.peakSource !== "job") return r.peakBytes;
    const above = [...known.values()].map((k) => (k.peakSource === "job" && k.peakBytes !== null && k.measuredPeakBytes !== undefined ? k.measuredPeakBytes - k.peakBytes : 0));
    return r.peakBytes + Math.max(0, ...above);
  };
  /** Clamps a guess between what is known: above the largest fitting batch is where the answer can be. */
  const within = (guess: number): number => {
    const fitting = [...known.values()].filter((r) => r.fits).map((r) => r.batch);
    const failing = [...known.values()].filter((r) => !r.fits).map((r) => r.batch);
    const low = Math.max(1, ...fitting);
    const high = Math.min(cap, ...failing.map((b) => b - 1));
    return Math.max(Math.min(Math.floor(guess), high), Math.min(low, high), 1);
  };
  const search = async (seed: number) =>
    (
      await searchMaxBatch(async (b) => (await runAt(b)).fits, {
        seed: within(seed),
        ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
        ...(options.signal !== undefined && { signal: options.signal }),
      })
    ).batchSize;

  let modelReport: CalibratedSearchResult["model"];
  if (options.model !== undefined) {
    const seed = Math.min(Math.max(1, options.model.batchSize), cap);
    const first = await runAt(seed);
    const bytes = options.model.bytesAt(seed);
    const error = options.model.relativeError ?? MODEL_RELATIVE_ERROR;
    const measured = deviceBytes(first);
    const agreed = first.fits && (measured === null || Math.abs(measured - bytes) <= error * bytes);
    modelReport = { batchSize: seed, bytes, measuredBytes: measured, agreed };
    if (agreed) {
      // Within its error, the model's slope is trusted and its offset corrected by the measured
      // peak (a context or a workspace it sized differently): the search starts from there.
      const modelSlope = seed > 1 ? (bytes - options.model.bytesAt(1)) / (seed - 1) : options.model.bytesAt(2) - bytes;
      let start = seed;
      if (modelSlope > 0) {
        slope = modelSlope;
        if (measured !== null) start = within((options.budgetBytes - (measured - modelSlope * seed)) / modelSlope);
      }
      if (start !== seed) modelReport.correctedBatchSize = start;
      return { batchSize: await search(start), trace, predictedBatchSize: seed, method: "model", model: modelReport };
    }
  }

  const b1 = Math.min(options.calibrate?.[0] ?? 1, cap);
  const first = await runAt(b1);
  if (!first.fits) {
    const batchSize = b1 === 1 ? 0 : await search(b1 - 1);
    return { batchSize, trace, predictedBatchSize: null, method: "search", ...(modelReport && { model: modelReport }) };
  }
  if (b1 === cap) return { batchSize: cap, trace, predictedBatchSize: null, method: "search", ...(modelReport && { model: modelReport }) };
  let b2 = secondBatch(options, first, known, b1, cap);
  let second = await runAt(b2);
  const result = (batchSize: number, predicted: number | null, calibration?: Calibration): CalibratedSearchResult => ({
    batchSize,
    trace,
    ...(calibration && { calibration }),
    predictedBatchSize: predicted,
    method: calibration ? "calibration" : "search",
    ...(modelReport && { model: modelReport }),
  });
  // A peak that did not grow says nothing about the slope (the batch's bytes hid in the allocator's
  // rounding, or the job ignores the batch): double the second batch until it grows.
  while (second.fits && first.peakBytes !== null && second.peakBytes !== null && second.peakBytes <= first.peakBytes) {
    if (b2 >= cap) return result(cap, null);
    if (b2 >= NO_GROWTH_LIMIT && options.maxBatch === undefined) {
      throw new VramfitError(
        "ERR_JOB_UNMEASURED",
        `the job's peak did not grow from batch ${b1} (${first.peakBytes} bytes) to batch ${b2} (${second.peakBytes} bytes): ` +
          "it may not use the batch size ({batch} or VRAMFIT_BATCH); give --max-batch to search anyway",
      );
    }
    b2 = Math.min(b2 * 2, cap);
    second = await runAt(b2);
  }
  if (!second.fits) return result(await search((Math.max(...[...known.values()].filter((r) => r.fits).map((r) => r.batch)) + b2) / 2), null);
  if (first.peakBytes === null || second.peakBytes === null) {
    if (options.maxBatch === undefined) {
      throw new VramfitError(
        "ERR_JOB_UNMEASURED",
        `no peak was measured for batches ${b1} and ${b2} (NVML lists none of the job's processes and no device reading, and the job printed no VRAMFIT_PEAK_BYTES line): ` +
          "print that line from the job (README, \"Running the real job\"), or give --max-batch to search by runs alone",
      );
    }
    return result(await search(b2), null);
  }
  const p1 = deviceBytes(first)!;
  const perSampleBytes = (deviceBytes(second)! - p1) / (b2 - b1);
  const fixedBytes = p1 - perSampleBytes * b1;
  const calibration: Calibration = { batches: [b1, b2], fixedBytes: Math.round(fixedBytes), perSampleBytes: Math.round(perSampleBytes) };
  if (perSampleBytes > 0) slope = perSampleBytes;
  const predict = (intercept: number, slope: number) => within((options.budgetBytes - intercept) / slope);
  const predicted = predict(fixedBytes, perSampleBytes);
  // The prediction's run is the search's first anyway. When it fits, its peak is a calibration
  // point far from B1, where the allocator's rounding no longer blurs the slope. When it does not,
  // one run at the prediction of the steepest slope the rounding allows (PEAK_UNCERTAINTY_BYTES on
  // each peak) most likely fits and serves instead. Then the search starts from the refined line.
  let point = await runAt(predicted);
  if (!point.fits) {
    const cautious = predict(p1 - (perSampleBytes + (2 * PEAK_UNCERTAINTY_BYTES) / (b2 - b1)) * b1, perSampleBytes + (2 * PEAK_UNCERTAINTY_BYTES) / (b2 - b1));
    point = await runAt(cautious);
    if (!point.fits) return result(await search(cautious), predicted, calibration);
  }
  const pointBytes = deviceBytes(point);
  if (pointBytes !== null && point.batch > b2) {
    const slope = (pointBytes - p1) / (point.batch - b1);
    const intercept = p1 - slope * b1;
    const refined = slope > 0 ? predict(intercept, slope) : point.batch;
    calibration.refinement = { batch: point.batch, fixedBytes: Math.round(intercept), perSampleBytes: Math.round(slope), predictedBatchSize: refined };
    return result(await search(refined), predicted, calibration);
  }
  return result(await search(point.batch), predicted, calibration);
}

/**
 * The second calibration batch: the user's; else the model's seed when it ran and fitted (its
 * peak is a second point already); else the largest batch peak(B1) proves safe: with
 * peak(b) = fixed + perSample × b and fixed ≥ 0, b × peak(B1) / B1 ≥ peak(b), so ⌊B1 × budget /
 * peak(B1)⌋ fits. Far from B1, it makes the slope precise; below the answer, it costs no failure.
 */
function secondBatch(options: CalibratedSearchOptions, first: JobRun, known: ReadonlyMap<number, JobRun>, b1: number, cap: number): number {
  if (options.calibrate !== undefined) return Math.min(options.calibrate[1], cap);
  const seeded = [...known.values()].find((r) => r.batch !== b1 && r.fits && r.peakBytes !== null);
  if (seeded !== undefined) return seeded.batch;
  const safe = first.peakBytes !== null && first.peakBytes > 0 ? Math.floor((b1 * options.budgetBytes) / Math.max(first.peakBytes, first.measuredPeakBytes ?? 0)) : b1 + 1;
  // Never past a batch already seen to fail (a model's seed that did not fit).
  const failing = [...known.values()].filter((r) => !r.fits).map((r) => r.batch - 1);
  return Math.max(Math.min(safe, cap, ...failing), b1 + 1);
}

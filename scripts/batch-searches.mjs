// The batch-size searches users run today, reimplemented step for step against a `fits(batch)`
// (true: the batch runs; false: out of memory), for scripts/bench.mjs and scripts/bench-jobs.mjs.
// Each returns the batch it settles on and the trials it made.

/**
 * The common hand-written routine: bisect the largest fitting batch in [1, 1024], assuming batch 1
 * fits (never checked). Ten trials whatever the answer; it returns 1024 when more fits (capped)
 * and 1 when nothing does.
 */
export async function bisect1024(fits) {
  const trace = [];
  let low = 1;
  let high = 1024;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    const ok = await fits(middle);
    trace.push({ batch: middle, fits: ok });
    if (ok) low = middle;
    else high = middle - 1;
  }
  return { batchSize: low, trials: trace.length, trace };
}

/**
 * Lightning's `Tuner.scale_batch_size(mode="binsearch")` with its defaults (init_val=2,
 * max_trials=25): `_run_binary_scaling` in src/lightning/pytorch/tuner/batch_size_scaling.py of
 * Lightning-AI/pytorch-lightning (read at commit a9ca6b1bb4d1150088290a4529ba1b6c6d5c5965), step
 * for step. It doubles from init_val until a trial runs out of memory, then bisects between the
 * last success and the failure. As there: `low` starts at 1 untested (a failure at 2 returns 1
 * without trying it), only successful trials count towards max_trials, and the answer is the
 * batch size it would try next. Not modelled: its early stop when the batch size reaches the
 * dataset's length (the dataset here is unbounded). Each trial is `steps_per_trial` (3) training
 * steps in Lightning; here one fits() evaluation.
 */
export async function lightningBinsearch(fits, { initVal = 2, maxTrials = 25 } = {}) {
  const trace = [];
  let newSize = initVal;
  let low = 1;
  let high = null;
  let count = 0;
  for (;;) {
    const ok = await fits(newSize);
    trace.push({ batch: newSize, fits: ok });
    if (ok) {
      count += 1;
      if (count > maxTrials) break;
      low = newSize;
      let next;
      if (high) {
        if (high - low <= 1) break;
        next = Math.floor((high + low) / 2);
      } else {
        next = Math.trunc(newSize * 2.0);
      }
      const changed = next !== newSize;
      newSize = next;
      if (!changed) break;
    } else {
      high = newSize;
      newSize = Math.floor((high + low) / 2);
      if (high - low <= 1) break;
    }
  }
  return { batchSize: newSize, trials: trace.length, trace };
}

/**
 * accelerate's `find_executable_batch_size` with its defaults (starting_batch_size=128, the batch
 * multiplied by 0.9 after each out-of-memory): src/accelerate/utils/memory.py of
 * huggingface/accelerate (read at commit 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83). It runs the
 * function at 128, then int(128 × 0.9) = 115, 103, … until one fits, and trains at that one; it
 * never tries a larger batch, so it is right only when the answer is on that sequence; it raises
 * "No executable batch size found, reached zero." at 0 (returned here as batch 0).
 */
export async function accelerateFindExecutable(fits, { startingBatchSize = 128 } = {}) {
  const trace = [];
  let batch = startingBatchSize;
  while (batch > 0) {
    const ok = await fits(batch);
    trace.push({ batch, fits: ok });
    if (ok) break;
    batch = Math.trunc(batch * 0.9);
  }
  return { batchSize: batch, trials: trace.length, trace };
}

/** Python's round(): halves go to the even neighbour. */
function pythonRound(x) {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Least squares y = p0·x + p1 (numpy.polyfit with deg=1). */
function lineFit(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const sxy = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0);
  const p0 = sxy / sxx;
  return [p0, my - p0 * mx];
}

/**
 * Ultralytics' AutoBatch (`autobatch` in ultralytics/utils/autobatch.py of ultralytics/ultralytics,
 * read at commit 02121a52dd0a636899376093a514e43cc27a4435), its defaults (fraction 0.60, default
 * batch 16): profile batches 1, 2, 4, 8, 16 (and 32, 64 on a GPU of 16 GiB or more), one step each,
 * reading the memory each takes (`profile`'s third field, torch.cuda.memory_reserved() in GB: here
 * `memoryBytes(batch)`, null when it runs out of memory); fit a line to log(memory) against
 * log(batch) over the valid points (positive, below the total, increasing); aim at `fraction` of
 * the free memory f = total − (reserved + allocated) before profiling (0 here: the job holds
 * nothing before); fall back to the last safe profiled batch when the aim is at or past the first
 * failure, and to 16 outside [1, 1024]. It verifies nothing: it trains at that batch.
 */
export async function ultralyticsAutobatch(memoryBytes, totalBytes, { fraction = 0.6, defaultBatch = 16 } = {}) {
  const gb = 2 ** 30;
  const t = totalBytes / gb;
  const batchSizes = t < 16 ? [1, 2, 4, 8, 16] : [1, 2, 4, 8, 16, 32, 64];
  const trace = [];
  const results = [];
  for (const batch of batchSizes) {
    const bytes = await memoryBytes(batch);
    trace.push({ batch, fits: bytes !== null });
    results.push(bytes === null ? null : bytes / gb);
  }
  const xy = batchSizes
    .map((x, i) => [x, results[i]])
    .filter(([, y], i) => y !== null && y > 0 && y < t && (i === 0 || results[i - 1] === null || y > results[i - 1]));
  const done = (batchSize) => ({ batchSize, trials: trace.length, trace });
  if (xy.length < 2) return done(defaultBatch); // numpy raises on too few points: the except branch
  const [p0, p1] = lineFit(
    xy.map(([x]) => Math.log(x)),
    xy.map(([, y]) => Math.log(y)),
  );
  const f = t; // t − (r + a), nothing reserved or allocated before profiling
  let b = pythonRound(Math.exp((Math.log(f * fraction) - p1) / p0));
  const failed = results.indexOf(null);
  if (failed >= 0 && b >= batchSizes[failed]) b = batchSizes[Math.max(failed - 1, 0)];
  if (!(b >= 1 && b <= 1024)) b = defaultBatch;
  return done(b);
}

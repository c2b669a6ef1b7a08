// PyTorch's CUDA caching allocator, emulated on a device of a given capacity: the segments a step's allocations and frees make it cudaMalloc, and whether the step completes.
//
// Rules and constants from c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, read at commit
// 001074d25084fdb87a799823e395a50f5ec044d3; the functions are named, docs/memory-model.md gives
// their lines), one stream, no CUDA graphs:
// - round_size: a request is rounded up to a multiple of kMinBlockSize (512 B), or with
//   roundup_power2_divisions to the next of N equal divisions of its power-of-two interval
//   (roundup_power2_next_division).
// - get_pool: requests ≤ kSmallSize (1 MiB) come from the small pool, larger ones from the large pool.
// - get_free_block: best fit, the smallest cached free block of the pool that is large enough
//   (the pool is a set ordered by size, then address: the lowest address wins a tie); with
//   max_split_size, a request below it never takes a block at or above it, and one at or above
//   it takes a block at most max_non_split_rounding (20 MiB) larger.
// - get_allocation_size: with no such block, cudaMalloc a new segment of kSmallBuffer (2 MiB)
//   for a small request, kLargeBuffer (20 MiB) for one under kMinLargeAlloc (10 MiB), else the
//   request rounded up to kRoundLarge (2 MiB).
// - malloc's out-of-memory path, when that cudaMalloc fails: release_available_cached_blocks
//   (with max_split_size only: cudaFree the smallest cached oversize block that is large enough,
//   else the largest ones until enough is freed) and retry; then release_cached_blocks (cudaFree
//   every cached block that is a whole segment, small pool and large) and retry once more
//   (num_alloc_retries counts it); then the step runs out of memory.
// - should_split: the block is split when what remains is ≥ kMinBlockSize (small pool) or
//   > kSmallSize (large pool, and only for requests below max_split_size); the remainder stays cached.
// - free_block: a freed block merges with free neighbours of its segment (try_merge_blocks) and is cached.
// - per_process_memory_fraction (setMemoryFraction, alloc_block): a segment that would take the
//   reserved bytes past allowed_memory_maximum is refused before cudaMalloc, and the out-of-memory
//   path runs as for a failed cudaMalloc.
// - garbage_collect_cached_blocks, only under a fraction (malloc's set_fraction test): before a
//   new segment, when the reserved bytes exceed threshold × allowed_memory_maximum, cudaFree the
//   large pool's unsplit cached blocks whose age (get_free_block calls on the pool since the block
//   was cached: get_free_blocks_call_count − gc_count_base) is at least the average, in the pool's
//   order, again with the new average until the excess is reclaimed or nothing more is freed.
// - large_segment_size_mb: the segment of a 1–10 MiB request (get_allocation_size's kLargeBuffer).
// Segments get fresh addresses (a bump pointer): only ties between equal-sized cached blocks depend on them.
//
// The replay keeps blocks in typed arrays (no object per block) and each pool as one array of
// block ids sorted by (size, address). Where the addon loads, its native replay answers instead
// (native/addon/replay_step.cc, the same rules): a fresh process would run this loop cold, and
// scripts/replay-speed.mjs times both (docs/memory-model.md, "Speed").
import { traceOfEvents, type AllocationEvent, type AllocationTrace } from "../step/allocationTrace.js";
import { nativeReplay, type NativeReplay } from "../native/binding.js";
import { DEFAULT_ALLOC_CONF, type AllocConf } from "./allocConf.js";

const MiB = 2 ** 20;

/** All sizes are rounded to at least this (`kMinBlockSize`). */
export const K_MIN_BLOCK_SIZE = 512;
/** The largest "small" request (`kSmallSize`). */
export const K_SMALL_SIZE = MiB;
/** Small requests are packed in segments of this size (`kSmallBuffer`). */
export const K_SMALL_BUFFER = 2 * MiB;
/** Requests between 1 and 10 MiB may use segments of this size (`kLargeBuffer`). */
export const K_LARGE_BUFFER = 20 * MiB;
/** From this size on a request gets a segment of its own size (`kMinLargeAlloc`). */
export const K_MIN_LARGE_ALLOC = 10 * MiB;
/** Large segments are rounded up to a multiple of this (`kRoundLarge`). */
export const K_ROUND_LARGE = 2 * MiB;

/** `round_size`: the block size PyTorch hands out for a request (`divisions`: the configuration's roundup_power2_divisions). */
export function roundSize(bytes: number, divisions: readonly number[] = DEFAULT_ALLOC_CONF.roundupPower2Divisions): number {
  if (bytes < K_MIN_BLOCK_SIZE) return K_MIN_BLOCK_SIZE;
  // roundup_power2_divisions(size): one entry per power of two from 1 MiB (2^20) up, the last for all above.
  const log2 = Math.floor(Math.log2(bytes));
  const n = divisions[Math.min(Math.max(0, log2 - 20), divisions.length - 1)]!;
  if (n > 1 && bytes > K_MIN_BLOCK_SIZE * n) {
    // roundup_power2_next_division
    const floor = 2 ** log2;
    if (floor === bytes) return bytes;
    const step = floor / n;
    if (step < 1) return floor * 2;
    return Math.ceil(bytes / step) * step;
  }
  return Math.ceil(bytes / K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE;
}

/** `get_allocation_size`: the segment cudaMalloc'd for a (rounded) request no cached block can hold (`largeSegment`: large_segment_size_mb). */
export function segmentSize(size: number, largeSegment = K_LARGE_BUFFER): number {
  if (size <= K_SMALL_SIZE) return K_SMALL_BUFFER;
  if (size < K_MIN_LARGE_ALLOC) return largeSegment;
  return Math.ceil(size / K_ROUND_LARGE) * K_ROUND_LARGE;
}

/** A step to replay: a plan's trace, or a list of events (tests, callers with their own steps). */
export type AllocationStep = AllocationTrace | readonly AllocationEvent[];

/** The step as a trace. */
export function asTrace(step: AllocationStep): AllocationTrace {
  return "order" in step ? step : traceOfEvents(step);
}

/**
 * What a replay of a step at a capacity did: the figures PyTorch's `torch.cuda.memory_stats()`
 * gives for the same step (names in brackets), and whether the step completed.
 */
export interface ReplayResult {
  /** Every allocation succeeded: the step runs on a device with this much memory for its segments. */
  fits: boolean;
  /** The most the segments held at once (`reserved_bytes.all.peak`), up to the failure when it did not fit. */
  reservedPeakBytes: number;
  /** The most the allocated blocks held at once (`allocated_bytes.all.peak`). */
  allocatedPeakBytes: number;
  /** Segments cudaMalloc'd (`num_device_alloc`). */
  cudaMallocs: number;
  /** Segments cudaFree'd by the out-of-memory path (`num_device_free`). */
  cudaFrees: number;
  /** Allocations that reached the last retry, after release_cached_blocks (`num_alloc_retries`). */
  allocRetries: number;
  /** The index in the trace's `order` of the allocation that ran out of memory; -1 when it fits. */
  failedAt: number;
  /**
   * The least reserve an allocation was refused at (the reserved bytes and the segment asked for,
   * more than the capacity allowed; Infinity: none was refused). The replay at every capacity from
   * `reservedPeakBytes` up to below this one is this replay: each allocation compares its reserve
   * with the capacity and nothing else does, so those comparisons, and every choice after them,
   * come out the same (src/fit/allocator.ts answers several budgets from one replay so). Given by
   * the caching allocator's replays (replayAtCapacity), not the expandable ones.
   */
  refusedBytes?: number;
  /**
   * With `segments: true`: the driver calls in order, `+bytes` for a cudaMalloc of that size and
   * `-(k + 1)` for the cudaFree of the k-th cudaMalloc'd segment. The last entry of a replay that
   * did not fit is the cudaMalloc that failed.
   */
  segmentLog?: number[];
}

/** What a replay counted, before `fits` is read from it. */
export type ReplayCounts = Omit<ReplayResult, "fits" | "segmentLog">;

/** A TypeScript replay's result (this file's and expandableSegments.ts'): the step fits where no allocation failed. */
export function replayResult(counts: ReplayCounts): ReplayResult {
  return { fits: counts.failedAt < 0, ...counts };
}

export interface ReplayOptions {
  /** Record the driver calls (`segmentLog`). */
  segments?: boolean;
  /** Replay in TypeScript even where the addon's native replay is there (tests compare the two). */
  typescript?: boolean;
  /**
   * PyTorch's allowed_memory_maximum (allowedMemoryBytes: ⌊per_process_memory_fraction × the
   * device's total⌋); unset or Infinity: no fraction, so no cap of its own and no garbage collection.
   */
  allowedBytes?: number;
}

// ---- the replay's state, kept between replays (one replay runs at a time: it never yields) ----

/** Per block: address, size, neighbours within the segment (-1: none), segment number, flags. */
let address = new Float64Array(1024);
let sizeOf = new Float64Array(1024);
let prevOf = new Int32Array(1024);
let nextOf = new Int32Array(1024);
let segmentOf = new Int32Array(1024);
/** Per block: the large pool's get_free_block count when it was last cached (gc_count_base). */
let cachedAt = new Float64Array(1024);
/** Bit 1: allocated; bit 2: small pool. */
let flags = new Uint8Array(1024);
const ALLOCATED = 1;
const SMALL = 2;
/** Block ids not in use, and how many blocks were ever made. */
let spare = new Int32Array(1024);
let spareCount = 0;
let made = 0;
/** The large pool's get_free_blocks_call_count in the replay under way. */
let largeCalls = 0;

/** A pool of cached free blocks: ids sorted by (size, address), as the allocator's std::set. */
interface Pool {
  ids: Int32Array;
  count: number;
}
const small: Pool = { ids: new Int32Array(256), count: 0 };
const large: Pool = { ids: new Int32Array(256), count: 0 };

function newBlock(at: number, bytes: number, segment: number, pool: number): number {
  let id: number;
  if (spareCount > 0) id = spare[--spareCount]!;
  else {
    if (made === address.length) growBlocks();
    id = made++;
  }
  address[id] = at;
  sizeOf[id] = bytes;
  prevOf[id] = -1;
  nextOf[id] = -1;
  segmentOf[id] = segment;
  flags[id] = pool;
  return id;
}

function dropBlock(id: number): void {
  if (spareCount === spare.length) {
    const more = new Int32Array(spare.length * 2);
    more.set(spare);
    spare = more;
  }
  spare[spareCount++] = id;
}

function growBlocks(): void {
  const n = address.length * 2;
  const grow = <T extends Float64Array | Int32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
    const b = make(n);
    b.set(a);
    return b;
  };
  address = grow(address, (k) => new Float64Array(k));
  sizeOf = grow(sizeOf, (k) => new Float64Array(k));
  prevOf = grow(prevOf, (k) => new Int32Array(k));
  nextOf = grow(nextOf, (k) => new Int32Array(k));
  segmentOf = grow(segmentOf, (k) => new Int32Array(k));
  cachedAt = grow(cachedAt, (k) => new Float64Array(k));
  flags = grow(flags, (k) => new Uint8Array(k));
}

/** The first position in the pool whose block is at least `bytes` large (at `at` or above when the sizes tie). */
function lowerBound(pool: Pool, bytes: number, at: number): number {
  const ids = pool.ids;
  let low = 0;
  let high = pool.count;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const id = ids[middle]!;
    const s = sizeOf[id]!;
    if (s < bytes || (s === bytes && address[id]! < at)) low = middle + 1;
    else high = middle;
  }
  return low;
}

function insert(pool: Pool, id: number): void {
  cachedAt[id] = pool === large ? largeCalls : 0;
  if (pool.count === pool.ids.length) {
    const more = new Int32Array(pool.ids.length * 2);
    more.set(pool.ids);
    pool.ids = more;
  }
  const at = lowerBound(pool, sizeOf[id]!, address[id]!);
  pool.ids.copyWithin(at + 1, at, pool.count);
  pool.ids[at] = id;
  pool.count += 1;
}

function removeAt(pool: Pool, at: number): void {
  pool.ids.copyWithin(at, at + 1, pool.count);
  pool.count -= 1;
}

function remove(pool: Pool, id: number): void {
  const at = lowerBound(pool, sizeOf[id]!, address[id]!);
  if (pool.ids[at] !== id) throw new Error("caching allocator emulation: block not in its pool");
  removeAt(pool, at);
}

/**
 * Replays a step's allocations and frees through the caching allocator on a device that has
 * `capacityBytes` for the job's segments (Infinity: no limit), under the configuration `conf`
 * (expandable segments are replayed by expandableSegments.ts, not here).
 */
export function replayAtCapacity(step: AllocationStep, capacityBytes?: number, conf?: AllocConf, options?: ReplayOptions): ReplayResult {
  // A fresh process compiles this function on its first call, inside the time of that first
  // replay, and V8's cost there grows with the code compiled, not only the code run (parsing and
  // bytecode, node --log-function-events): so this function holds only the common call (a trace,
  // no configuration, no options) on its way to the addon (native/addon/replay_step.cc, same
  // rules; a fresh process would otherwise run replayInTypeScript's loop cold), and every other
  // call goes to replayConfigured, compiled when one comes. In fresh processes (first call,
  // 2-event step, medians of 31-51) this took the JavaScript from 146-154 to 80-115 µs. What is
  // left is mostly the compilation itself (a function of one statement: ~13 µs), these checks
  // (~15 µs) and the result object (its seven fields, heap numbers, each stored for the first
  // time in the process: ~20 µs more than the same object of constants).
  const native = conf === undefined && options === undefined && "order" in step && step.order.length > TYPESCRIPT_EVENTS ? nativeReplay() : undefined;
  if (native === undefined) return replayConfigured(step, capacityBytes, conf, options);
  const io = defaultIo;
  io.set(DEFAULT_IO);
  if (capacityBytes !== undefined) io[0] = capacityBytes;
  const trace = step as AllocationTrace; // "order" in step, above (TypeScript narrows no further than the ternary)
  native(trace.order, trace.bytes, io);
  return { fits: io[0] === 1, reservedPeakBytes: io[1]!, allocatedPeakBytes: io[2]!, cudaMallocs: io[3]!, cudaFrees: io[4]!, allocRetries: io[5]!, failedAt: io[6]!, refusedBytes: io[7]! };
}

/** replayAtCapacity for any step, configuration and options: the native replay where it can, else the TypeScript one. */
function replayConfigured(step: AllocationStep, capacityBytes?: number, conf?: AllocConf, options?: ReplayOptions): ReplayResult {
  const trace = asTrace(step);
  const capacity = capacityBytes ?? Number.POSITIVE_INFINITY;
  const config = conf ?? DEFAULT_ALLOC_CONF;
  const segments = options?.segments === true;
  // The native replay knows no memory fraction (nor the collection it enables): those
  // configurations replay in TypeScript, decided here.
  const allowed = options?.allowedBytes ?? Number.POSITIVE_INFINITY;
  const native = options?.typescript === true || allowed !== Number.POSITIVE_INFINITY || trace.order.length <= TYPESCRIPT_EVENTS ? undefined : nativeReplay();
  if (native === undefined) return replayInTypeScript(trace.order, trace.bytes, capacity, config, segments, allowed);
  return nativeAnswer(native, trace, capacity, config, segments);
}

/**
 * Steps of at most this many events replay in TypeScript, the same figures as the addon's (the
 * replay tests compare the two): loading the addon (dlopen of vramfit.node and its registration,
 * ~1 ms in the CLI) is more than a step of a few tensors costs in TypeScript (an affine workload:
 * `batch --params ...`, 5 tensors), and on an analytic target (--memory, --gpu) nothing else loads
 * it (docs/benchmarks.md, "Ninth round").
 * A deep model's step (thousands of events, replayed a dozen times) still goes to the addon.
 */
const TYPESCRIPT_EVENTS = 64;

/**
 * A native replay's answer (this file's and expandableSegments.ts'): the configuration into
 * replay_step.cc's io, the figures out of it, and as `segmentLog` the log asked for: of driver
 * calls (`true`), or of pages ("pages": expandable_replay.h's page log, for expandableProbeSteps).
 */
export function nativeAnswer(native: NativeReplay, trace: AllocationTrace, capacity: number, conf: AllocConf, segments: boolean | "pages"): ReplayResult {
  const divisions = conf.roundupPower2Divisions;
  if (io === undefined || io.length < 7 + divisions.length) io = new Float64Array(7 + divisions.length);
  io[0] = capacity;
  io[1] = conf.maxSplitSizeBytes;
  io[2] = conf.maxNonSplitRoundingBytes;
  io[3] = segments === "pages" ? 2 : segments ? 1 : 0;
  io[4] = conf.largeSegmentSizeBytes;
  io[5] = divisions.length;
  io.set(divisions, 6);
  const log = native(trace.order, trace.bytes, io);
  const result: ReplayResult = { fits: io[0] === 1, reservedPeakBytes: io[1]!, allocatedPeakBytes: io[2]!, cudaMallocs: io[3]!, cudaFrees: io[4]!, allocRetries: io[5]!, failedAt: io[6]! };
  // replay_step.cc writes the least refused reserve after the seven figures (io is always long
  // enough: 7 + the divisions, at least one); the expandable replay has none and writes NaN. An
  // addon built before it leaves the second division there, a few units at most: an empty range of
  // capacities, or one that only a capacity too small for any segment falls in, where every replay
  // fails at its first allocation alike.
  const refused = io[7]!;
  if (!Number.isNaN(refused)) result.refusedBytes = refused;
  if (log !== undefined) result.segmentLog = Array.from(log);
  return result;
}

/** replay_step.cc's io, one array for every replay (a replay is synchronous), at least 8 long for the figures (7 + the divisions, at least one). */
let io: Float64Array | undefined;

/**
 * io for no limit and the default configuration, no log, as nativeAnswer writes it: filled here by top-level statements, part of the module's code, so that
 * replayAtCapacity's common call copies it rather than compiling and running that writing.
 */
const DEFAULT_IO = new Float64Array(Math.max(8, 6 + DEFAULT_ALLOC_CONF.roundupPower2Divisions.length));
DEFAULT_IO[0] = Number.POSITIVE_INFINITY;
DEFAULT_IO[1] = DEFAULT_ALLOC_CONF.maxSplitSizeBytes;
DEFAULT_IO[2] = DEFAULT_ALLOC_CONF.maxNonSplitRoundingBytes;
DEFAULT_IO[4] = DEFAULT_ALLOC_CONF.largeSegmentSizeBytes;
DEFAULT_IO[5] = DEFAULT_ALLOC_CONF.roundupPower2Divisions.length;
DEFAULT_IO.set(DEFAULT_ALLOC_CONF.roundupPower2Divisions, 6);
/** The io replayAtCapacity's common call hands the addon (which overwrites the first 8 with the figures). */
const defaultIo = new Float64Array(DEFAULT_IO.length);

/** replayAtCapacity's rules in TypeScript: where the addon does not load, and for tests to compare with it. */
function replayInTypeScript(order: Int32Array, bytes: Float64Array, capacityBytes: number, conf: AllocConf, segments: boolean, allowedBytes = Number.POSITIVE_INFINITY): ReplayResult {
  const { maxSplitSizeBytes: maxSplit, maxNonSplitRoundingBytes: maxRounding, roundupPower2Divisions: divisions, largeSegmentSizeBytes: largeSegment } = conf;
  // The fraction refuses what would pass allowed_memory_maximum as the device refuses what would
  // pass its capacity, with the same out-of-memory path after: one limit, the lower.
  const limit = Math.min(capacityBytes, allowedBytes);
  const collect = allowedBytes !== Number.POSITIVE_INFINITY && conf.garbageCollectionThreshold > 0;
  const gcThreshold = collect ? Math.floor(conf.garbageCollectionThreshold * allowedBytes) : 0;
  largeCalls = 0;
  const plainRounding = divisions.every((n) => n <= 1);
  const log: number[] | undefined = segments ? [] : undefined;
  made = 0;
  spareCount = 0;
  small.count = 0;
  large.count = 0;
  const live = new Int32Array(bytes.length).fill(-1);
  let reserved = 0;
  let reservedPeak = 0;
  let allocated = 0;
  let allocatedPeak = 0;
  let mallocs = 0;
  let frees = 0;
  let retries = 0;
  let nextAddress = 0;
  let refused = Number.POSITIVE_INFINITY;

  /** alloc_block: cudaMalloc a segment for the request, unless the device is full. */
  const allocBlock = (segmentBytes: number, pool: number): number => {
    if (reserved + segmentBytes > limit) {
      if (reserved + segmentBytes < refused) refused = reserved + segmentBytes;
      return -1;
    }
    const id = newBlock(nextAddress, segmentBytes, mallocs, pool);
    log?.push(segmentBytes);
    nextAddress += segmentBytes;
    mallocs += 1;
    reserved += segmentBytes;
    if (reserved > reservedPeak) reservedPeak = reserved;
    return id;
  };
  /** cudaFree of a cached block that is a whole segment, out of its pool already. */
  const freeSegment = (id: number): void => {
    log?.push(-(segmentOf[id]! + 1));
    frees += 1;
    reserved -= sizeOf[id]!;
    dropBlock(id);
  };
  /** release_block: cudaFree the cached block at `at` in its pool. */
  const releaseBlock = (pool: Pool, at: number): void => {
    const id = pool.ids[at]!;
    removeAt(pool, at);
    freeSegment(id);
  };
  /** release_available_cached_blocks: with max_split_size, free oversize cached blocks until the request could be had. */
  const releaseAvailable = (pool: Pool, size: number): boolean => {
    if (!Number.isFinite(maxSplit)) return false;
    const key = size < maxSplit ? maxSplit : size;
    const at = lowerBound(pool, key, 0);
    if (at < pool.count) {
      releaseBlock(pool, at);
      return true;
    }
    // No single block is large enough: free the largest oversize ones, largest first.
    let released = 0;
    for (let k = pool.count - 1; k >= 0 && released < key && sizeOf[pool.ids[k]!]! >= maxSplit; k--) {
      released += sizeOf[pool.ids[k]!]!;
      releaseBlock(pool, k);
    }
    return released >= key;
  };
  /** release_cached_blocks: free every cached block that is a whole segment (release_blocks), large pool first. */
  const releaseCached = (): void => {
    for (const pool of [large, small]) {
      // In the pool's order, as release_blocks walks it; the kept ids close up behind.
      let kept = 0;
      for (let k = 0; k < pool.count; k++) {
        const id = pool.ids[k]!;
        if (prevOf[id] === -1 && nextOf[id] === -1) freeSegment(id);
        else pool.ids[kept++] = id;
      }
      pool.count = kept;
    }
  };

  /** garbage_collect_cached_blocks: see the file's head. */
  const collectGarbage = (): void => {
    if (reserved <= gcThreshold) return;
    const target = reserved - gcThreshold;
    let totalAge = 0;
    let freeable = 0;
    for (let k = 0; k < large.count; k++) {
      const id = large.ids[k]!;
      if (prevOf[id] === -1 && nextOf[id] === -1) {
        totalAge += largeCalls - cachedAt[id]!;
        freeable += 1;
      }
    }
    let reclaimed = 0;
    let freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const ageThreshold = totalAge / freeable;
      freed = false;
      // One pass over the pool in its order, freeing every old enough unsplit block (PyTorch does
      // not stop at the target within a pass); the kept ids close up behind.
      let kept = 0;
      for (let k = 0; k < large.count; k++) {
        const id = large.ids[k]!;
        const age = largeCalls - cachedAt[id]!;
        if (prevOf[id] === -1 && nextOf[id] === -1 && age >= ageThreshold) {
          freed = true;
          reclaimed += sizeOf[id]!;
          totalAge -= age;
          freeable -= 1;
          freeSegment(id);
        } else large.ids[kept++] = id;
      }
      large.count = kept;
    }
  };

  let failedAt = -1;
  for (let k = 0; k < order.length; k++) {
    const code = order[k]!;
    if (code < 0) {
      // free → free_block: merge with free neighbours (try_merge_blocks), then cache.
      const id = live[~code]!;
      if (id < 0) continue;
      live[~code] = -1;
      const pool = (flags[id]! & SMALL) !== 0 ? small : large;
      allocated -= sizeOf[id]!;
      flags[id] = flags[id]! & ~ALLOCATED;
      const before = prevOf[id]!;
      if (before >= 0 && (flags[before]! & ALLOCATED) === 0) {
        remove(pool, before);
        address[id] = address[before]!;
        sizeOf[id] = sizeOf[id]! + sizeOf[before]!;
        const first = prevOf[before]!;
        prevOf[id] = first;
        if (first >= 0) nextOf[first] = id;
        dropBlock(before);
      }
      const after = nextOf[id]!;
      if (after >= 0 && (flags[after]! & ALLOCATED) === 0) {
        remove(pool, after);
        sizeOf[id] = sizeOf[id]! + sizeOf[after]!;
        const last = nextOf[after]!;
        nextOf[id] = last;
        if (last >= 0) prevOf[last] = id;
        dropBlock(after);
      }
      insert(pool, id);
      continue;
    }
    const request = bytes[code]!;
    if (request <= 0) continue;
    const size = plainRounding ? (request < K_MIN_BLOCK_SIZE ? K_MIN_BLOCK_SIZE : Math.ceil(request / K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE) : roundSize(request, divisions);
    const isSmall = size <= K_SMALL_SIZE;
    const pool = isSmall ? small : large;
    const poolFlag = isSmall ? SMALL : 0;
    // get_free_block (it counts its calls on the pool only while the collection is on)
    if (collect && !isSmall) largeCalls += 1;
    let id = -1;
    const at = lowerBound(pool, size, 0);
    if (at < pool.count) {
      const found = pool.ids[at]!;
      const s = sizeOf[found]!;
      if (!((size < maxSplit && s >= maxSplit) || (size >= maxSplit && s >= size + maxRounding))) {
        id = found;
        removeAt(pool, at);
      }
    }
    if (id < 0) {
      if (collect) collectGarbage();
      const segmentBytes = segmentSize(size, largeSegment);
      id = allocBlock(segmentBytes, poolFlag);
      if (id < 0 && releaseAvailable(pool, size)) id = allocBlock(segmentBytes, poolFlag);
      if (id < 0) {
        releaseCached();
        retries += 1;
        id = allocBlock(segmentBytes, poolFlag);
      }
      if (id < 0) {
        log?.push(segmentBytes);
        failedAt = k;
        break;
      }
    }
    // should_split, then alloc_found_block: the request keeps the front, the rest is cached.
    const remaining = sizeOf[id]! - size;
    if (isSmall ? remaining >= K_MIN_BLOCK_SIZE : size < maxSplit && remaining > K_SMALL_SIZE) {
      const rest = newBlock(address[id]! + size, remaining, segmentOf[id]!, poolFlag);
      const last = nextOf[id]!;
      prevOf[rest] = id;
      nextOf[rest] = last;
      if (last >= 0) prevOf[last] = rest;
      nextOf[id] = rest;
      sizeOf[id] = size;
      insert(pool, rest);
    }
    flags[id] = poolFlag | ALLOCATED;
    allocated += sizeOf[id]!;
    if (allocated > allocatedPeak) allocatedPeak = allocated;
    live[code] = id;
  }
  const result = replayResult({ reservedPeakBytes: reservedPeak, allocatedPeakBytes: allocatedPeak, cudaMallocs: mallocs, cudaFrees: frees, allocRetries: retries, failedAt, refusedBytes: refused });
  if (log !== undefined) result.segmentLog = log;
  return result;
}

/**
 * A replay's driver calls as a probe takes them: every segment's size in cudaMalloc order, and
 * the frees as flattened (before, which) pairs — before segment `before` is allocated, segment
 * `which` is given back (`log` is a segmentLog; a free always precedes the retry it makes room for).
 */
export function probeSteps(log: readonly number[]): { sizes: number[]; releases: number[] } {
  const sizes: number[] = [];
  const releases: number[] = [];
  for (const op of log) {
    if (op > 0) sizes.push(op);
    else releases.push(sizes.length, -op - 1);
  }
  return { sizes, releases };
}

/**
 * Replays a step's allocations and frees through the caching allocator with no memory limit and
 * returns the size of every segment it cudaMallocs, in order: at the end of the step PyTorch
 * holds all of them (`torch.cuda.memory_reserved()` is their sum).
 */
export function cachingAllocatorSegments(step: AllocationStep, conf: AllocConf = DEFAULT_ALLOC_CONF): number[] {
  return replayAtCapacity(step, Number.POSITIVE_INFINITY, conf, { segments: true }).segmentLog!;
}

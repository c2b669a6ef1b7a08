// PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), emulated on a device of a given capacity: the pages a step maps and unmaps, and whether it completes.
//
// From c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, read at commit
// 001074d25084fdb87a799823e395a50f5ec044d3, as cachingAllocator.ts; checked against torch 2.14.1's
// libc10_cuda.so by test/reference/genuineAllocator.test.ts), one stream, no CUDA graphs:
// - Note [Expandable Segments] and struct ExpandableSegment: each pool has one segment, a range of
//   address space (1 1/8 of the device's memory, reserved once) that physical pages back as it
//   grows: pages of kSmallBuffer (2 MiB) in the small pool, kLargeBuffer (20 MiB) in the large one,
//   each its own cuMemCreate. ExpandableSegment::map maps whole pages and fails as a whole when one
//   page cannot be had (the pages made so far are released); unmap gives back the whole pages that
//   lie inside a range.
// - Blocks cover the segment: allocated, cached free (mapped), or unmapped address space (the
//   pool's `unmapped` set, by address). get_free_block is the caching allocator's best fit, except
//   that it walks on from the smallest fitting block to the next while the next one's
//   expandable_size (its size, plus the unmapped block after it) is smaller: the free block before
//   unmapped space is taken last.
// - alloc_block with expandable segments is try_allocate_expandable_block for the request itself
//   (not get_allocation_size's segment): find_expandable_block takes the lowest unmapped block (or
//   the free block before it) with room, and map_block maps just the pages the request still
//   lacks, merging them with the free neighbours (try_merge_blocks merges only mapped with mapped).
// - should_split: with expandable segments a block is split whenever ≥ kMinBlockSize remains.
// - malloc's out-of-memory path: when a map fails, release_cached_blocks → release_blocks unmaps the
//   whole pages inside every cached free block (unmap_block: the partial pages at either end stay
//   mapped, as free blocks of their own), large pool first, each pool in its free blocks' (size,
//   address) order; a segment left with nothing mapped is released; then one retry
//   (num_alloc_retries), then the step runs out of memory. release_available_cached_blocks (only
//   with max_split_size_mb) releases no block of an expandable segment: at the commit above it
//   would release_block one, which asserts !block->expandable_segment_, but torch 2.14.1 skips them
//   as later sources do ("if (!(*cur)->expandable_segment_) release_block"), and its libc10_cuda.so
//   unmaps and retries instead (test/unit/expandableSegments.test.ts's max_split_size_mb case,
//   replayed through it).
// - per_process_memory_fraction (set_fraction): alloc_block tests `total_allocated_memory +
//   p.alloc_size > allowed_memory_maximum` before it tries try_allocate_expandable_block, and
//   refuses as a failed cudaMalloc (then the out-of-memory path above). p.alloc_size is
//   get_allocation_size's segment, as without expandable segments (2 MiB, large_segment_size_mb
//   for 1–10 MiB, else the request rounded to 2 MiB), not the pages the map would add; map_block and
//   unmap_block move total_allocated_memory by the pages. So a map may still take the reserved
//   bytes past the cap (a 30 MiB request maps two 20 MiB pages where the test counted 30 MiB), and a
//   request that lacks only part of a page, beside a free block, is tested with its whole segment.
//   garbage_collect_cached_blocks (the threshold under a fraction) frees only large-pool blocks that
//   are whole segments (!is_split()); a block of an expandable segment always has the unmapped rest
//   of its 1 1/8-device range beside it, so the collection frees nothing here.
//   (CUDACachingAllocator.cpp at the commit above: alloc_block, map_block, unmap_block,
//   garbage_collect_cached_blocks; checked against torch 2.14.1 by
//   test/reference/allocConfGenuine.test.ts. The copy read had no line numbers; in torch 2.14.1's
//   own file, as its libc10_cuda.so's assertion messages place them (`strings libc10_cuda.so`),
//   map_block's first assertion is line 3397, try_allocate_expandable_block's `candidate->mapped`
//   3484, and alloc_block's closing `p.block != nullptr` 3986, after the fraction's test.)
// Reserved memory (`reserved_bytes`) is the mapped pages of both pools; a step fits a capacity when
// every map it makes fits beside what is mapped then.
//
// One segment per pool: a second one is made only when no unmapped range of the first has room,
// which needs its address space (1 1/8 of the device) used up by unmapped gaps; the emulation
// gives the segment 2^50 B of address space instead (ties between free blocks compare sizes that
// include the unmapped block after them, so only the order of those sizes matters).
import { K_MIN_BLOCK_SIZE, K_SMALL_BUFFER, K_SMALL_SIZE, asTrace, nativeAnswer, replayResult, roundSize, segmentSize, type AllocationStep, type ReplayResult } from "./cachingAllocator.js";
import { nativeExpandableReplay } from "../native/binding.js";
import { DEFAULT_ALLOC_CONF, type AllocConf } from "./allocConf.js";

/** The address space the emulation gives each pool's segment. */
const SEGMENT_ADDRESS_SPACE = 2 ** 50;

/** A piece of a segment: allocated to a tensor, cached free, or unmapped address space. Neighbours are within the segment. */
interface Block {
  address: number;
  size: number;
  allocated: boolean;
  mapped: boolean;
  prev: Block | undefined;
  next: Block | undefined;
}

/**
 * Cached free blocks ordered by size, then address (the pool's `blocks` set): one address-ordered
 * bucket per distinct size under a sorted list of the sizes. A deep model caches tens of thousands
 * of free blocks but only a few hundred distinct sizes, so insertion and removal stay cheap.
 */
class FreePool {
  /** The sizes that have at least one free block, ascending. */
  private readonly sizes: number[] = [];
  /** Free blocks of each size, by ascending address. */
  private readonly buckets = new Map<number, Block[]>();

  /** The index of the first size ≥ `size` (binary search, no closure: this is the replay's hot path). */
  private sizeIndex(size: number): number {
    const sizes = this.sizes;
    let low = 0;
    let high = sizes.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (sizes[middle]! < size) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The index of the first block of a bucket at or above `address`. */
  private static addressIndex(bucket: readonly Block[], address: number): number {
    let low = 0;
    let high = bucket.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (bucket[middle]!.address < address) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  insert(block: Block): void {
    let bucket = this.buckets.get(block.size);
    if (bucket === undefined) {
      this.buckets.set(block.size, (bucket = []));
      this.sizes.splice(this.sizeIndex(block.size), 0, block.size);
    }
    const at = FreePool.addressIndex(bucket, block.address);
    if (at === bucket.length) bucket.push(block);
    else bucket.splice(at, 0, block);
  }

  remove(block: Block): void {
    const bucket = this.buckets.get(block.size);
    const index = bucket === undefined ? -1 : FreePool.addressIndex(bucket, block.address);
    if (bucket === undefined || bucket[index] !== block) throw new Error("expandable segments emulation: block not in its pool");
    if (index === bucket.length - 1) bucket.pop();
    else bucket.splice(index, 1);
    if (bucket.length === 0) {
      this.buckets.delete(block.size);
      this.sizes.splice(this.sizeIndex(block.size), 1);
    }
  }

  /** The first block of at least `size` bytes in the pool's order (`blocks.lower_bound`). */
  first(size: number): Block | undefined {
    const index = this.sizeIndex(size);
    return index === this.sizes.length ? undefined : this.buckets.get(this.sizes[index]!)![0];
  }

  /** The block after `block` in the pool's order. */
  after(block: Block): Block | undefined {
    const bucket = this.buckets.get(block.size)!;
    const index = FreePool.addressIndex(bucket, block.address);
    if (index + 1 < bucket.length) return bucket[index + 1];
    const next = this.sizes[this.sizeIndex(block.size) + 1];
    return next === undefined ? undefined : this.buckets.get(next)![0];
  }

  /** Every block, in the pool's order. */
  all(): Block[] {
    return this.sizes.flatMap((size) => this.buckets.get(size)!);
  }
}

/** `expandable_size`: a free block's size, with the unmapped space right after it. */
function expandableSize(block: Block): number {
  return block.size + (block.next !== undefined && !block.next.mapped ? block.next.size : 0);
}

/** One pool and its expandable segment. */
class Pool {
  readonly free = new FreePool();
  /** Unmapped blocks by address (`unmapped`); empty when the pool has no segment. */
  unmapped: Block[] = [];
  /**
   * For a probe: by page number within the segment, the page's index among the pages mapped. An
   * array, not a Map keyed by address: a probe of a multi-terabyte budget maps millions of pages,
   * and Map.set was a sixth of such a probe's CPU.
   */
  readonly pageIndex: number[] = [];
  /** Where the next segment's address space begins. */
  private nextBase = 0;
  private base = 0;

  constructor(readonly pageBytes: number) {}

  insertUnmapped(block: Block): void {
    let k = this.unmapped.length;
    while (k > 0 && this.unmapped[k - 1]!.address > block.address) k--;
    this.unmapped.splice(k, 0, block);
  }

  removeUnmapped(block: Block): void {
    const k = this.unmapped.indexOf(block);
    if (k < 0) throw new Error("expandable segments emulation: block not unmapped");
    this.unmapped.splice(k, 1);
  }

  /** A new segment: all of it one unmapped block (`find_expandable_block`'s last resort). */
  newSegment(): Block {
    this.base = this.nextBase;
    this.nextBase += SEGMENT_ADDRESS_SPACE;
    const block: Block = { address: this.base, size: SEGMENT_ADDRESS_SPACE, allocated: false, mapped: false, prev: undefined, next: undefined };
    this.insertUnmapped(block);
    return block;
  }

  /** The page index of an address, rounded down (`segmentLeft`) or up (`segmentRight`). */
  pageDown(address: number): number {
    return Math.floor((address - this.base) / this.pageBytes);
  }
  pageUp(address: number): number {
    return Math.ceil((address - this.base) / this.pageBytes);
  }
  pageAddress(page: number): number {
    return this.base + page * this.pageBytes;
  }
}

/** `try_merge_blocks`: `dst` (in no set) takes in `src` when it is free and mapped as `dst` is. */
function merge(pool: Pool, dst: Block, src: Block | undefined): void {
  if (src === undefined || src.allocated || src.mapped !== dst.mapped) return;
  if (src.mapped) pool.free.remove(src);
  else pool.removeUnmapped(src);
  if (dst.prev === src) {
    dst.address = src.address;
    dst.prev = src.prev;
    if (dst.prev !== undefined) dst.prev.next = dst;
  } else {
    dst.next = src.next;
    if (dst.next !== undefined) dst.next.prev = dst;
  }
  dst.size += src.size;
}

/** A block placed between `prev` and `next`. */
function splice(block: Block, prev: Block | undefined, next: Block | undefined): Block {
  block.prev = prev;
  block.next = next;
  if (prev !== undefined) prev.next = block;
  if (next !== undefined) next.prev = block;
  return block;
}

/** What a replay through expandable segments did; `mapLog`, with `segments: true`: + bytes mapped, − bytes unmapped, in order (one entry per map_block / unmap_block). */
export interface ExpandableReplayResult extends ReplayResult {
  mapLog?: number[];
}

/**
 * Replays a step's allocations and frees through expandable segments on a device that has
 * `capacityBytes` for the job's pages (Infinity: no limit), under PyTorch's allowed_memory_maximum
 * `allowedBytes` where the configuration sets a fraction (allowedMemoryBytes; Infinity: none).
 * `cudaMallocs` counts maps (`num_device_alloc`), `cudaFrees` unmaps (`num_device_free`).
 */
export function replayExpandable(step: AllocationStep, capacityBytes = Number.POSITIVE_INFINITY, conf: AllocConf = DEFAULT_ALLOC_CONF, options: { segments?: boolean; typescript?: boolean; allowedBytes?: number } = {}): ExpandableReplayResult {
  // The addon's replay (native/addon/expandable_replay.h), same rules: this one's objects per block
  // took ~40 ms on a fresh process's first call. `typescript`: this one, for tests to compare. The
  // addon knows no memory fraction: those replays stay here (as replayAtCapacity's do).
  const allowed = options.allowedBytes ?? Number.POSITIVE_INFINITY;
  const native = options.typescript === true || allowed !== Number.POSITIVE_INFINITY ? undefined : nativeExpandableReplay();
  if (native === undefined) return replay(step, capacityBytes, conf, allowed, options.segments ? [] : undefined);
  const { segmentLog, ...figures } = nativeAnswer(native, asTrace(step), capacityBytes, conf, options.segments === true);
  return segmentLog === undefined ? figures : { ...figures, mapLog: segmentLog };
}

/**
 * The step's pages as a device probe takes them (see cachingAllocator.ts' probeSteps): the
 * allocations in order, and as flattened (before, which) pairs the allocations given back before
 * allocation `before` is made; `fits` false when the replay at `capacityBytes` ran out.
 *
 * One allocation for each run of pages that one map_block mapped and the out-of-memory path unmaps
 * at the same moment (or never), with its page size (`pageBytes`): the addon's probe holds it as
 * PyTorch does (ExpandableSegment::map), one cuMemCreate per page mapped into a reserved range, or
 * with one cuMemAlloc where the driver lacks that API or the caller asks (virtualMemory: false).
 */
export function expandableProbeSteps(step: AllocationStep, capacityBytes: number, conf: AllocConf = DEFAULT_ALLOC_CONF, options: { typescript?: boolean; allowedBytes?: number } = {}): { sizes: number[]; releases: number[]; pageBytes: number[]; fits: boolean } {
  const pages: number[] = [];
  const releases: number[] = [];
  const mapStarts: number[] = [];
  const allowed = options.allowedBytes ?? Number.POSITIVE_INFINITY;
  const native = options.typescript === true || allowed !== Number.POSITIVE_INFINITY ? undefined : nativeExpandableReplay();
  let fits: boolean;
  if (native === undefined) fits = replay(step, capacityBytes, conf, allowed, undefined, pages, releases, mapStarts).fits;
  else {
    // The addon's page log (expandable_replay.h): 0 where a map begins, +bytes a page mapped, -(k + 1) page k unmapped.
    const answer = nativeAnswer(native, asTrace(step), capacityBytes, conf, "pages");
    fits = answer.fits;
    for (const entry of answer.segmentLog!) {
      if (entry === 0) mapStarts.push(pages.length);
      else if (entry > 0) pages.push(entry);
      else releases.push(pages.length, -entry - 1);
    }
  }
  return { ...pageRuns(pages, releases, mapStarts), fits };
}

/**
 * Joins consecutive pages of one map that are given back together (or never) into one allocation:
 * `releases` (before, which) renumbered to the runs. A release's `before` is the first page of a
 * map, so it starts a run, and `which` lies in an earlier run.
 */
function pageRuns(pages: readonly number[], releases: readonly number[], mapStarts: readonly number[]): { sizes: number[]; releases: number[]; pageBytes: number[] } {
  const count = pages.length;
  const releasedBefore = new Float64Array(count).fill(Number.POSITIVE_INFINITY);
  const starts = new Uint8Array(count + 1);
  for (const start of mapStarts) starts[start] = 1;
  for (let r = 0; r < releases.length; r += 2) {
    starts[releases[r]!] = 1;
    releasedBefore[releases[r + 1]!] = releases[r]!;
  }
  const run = new Int32Array(count + 1);
  const sizes: number[] = [];
  // A run's pages come from one map, so from one pool: one page size (the probe maps it page by page).
  const pageBytes: number[] = [];
  for (let page = 0; page < count; page++) {
    if (page === 0 || starts[page] === 1 || releasedBefore[page] !== releasedBefore[page - 1]) {
      sizes.push(pages[page]!);
      pageBytes.push(pages[page]!);
    } else sizes[sizes.length - 1]! += pages[page]!;
    run[page] = sizes.length - 1;
  }
  run[count] = sizes.length;
  const given = new Uint8Array(sizes.length);
  const runReleases: number[] = [];
  for (let r = 0; r < releases.length; r += 2) {
    const which = run[releases[r + 1]!]!;
    if (given[which] === 1) continue;
    given[which] = 1;
    runReleases.push(run[releases[r]!]!, which);
  }
  return { sizes, releases: runReleases, pageBytes };
}

/**
 * The replay; `allowedBytes` PyTorch's allowed_memory_maximum (Infinity: no fraction), `log`
 * collects map/unmap bytes, `pages` the size of every page mapped and `releases` (with `pages`)
 * the (before, which) pairs of the pages unmapped.
 */
function replay(step: AllocationStep, capacityBytes: number, conf: AllocConf, allowedBytes: number, log: number[] | undefined, pages?: number[], releases?: number[], mapStarts?: number[]): ExpandableReplayResult {
  const { order, bytes } = asTrace(step);
  const { maxSplitSizeBytes: maxSplit, maxNonSplitRoundingBytes: maxRounding, roundupPower2Divisions: divisions } = conf;
  const small = new Pool(K_SMALL_BUFFER);
  const large = new Pool(conf.largeSegmentSizeBytes);  // large_segment_size_mb: the large pool's page (measured on torch 2.14.1)
  const live: (Block | undefined)[] = new Array<Block | undefined>(bytes.length);
  let reserved = 0;
  let reservedPeak = 0;
  let allocated = 0;
  let allocatedPeak = 0;
  let maps = 0;
  let unmaps = 0;
  let retries = 0;

  /** get_free_block, with expandable segments' walk past blocks that border unmapped space. */
  const freeBlock = (pool: Pool, size: number): Block | undefined => {
    let found = pool.free.first(size);
    if (found === undefined) return undefined;
    for (let next = pool.free.after(found); next !== undefined && expandableSize(next) < expandableSize(found); next = pool.free.after(found)) found = next;
    if ((size < maxSplit && found.size >= maxSplit) || (size >= maxSplit && found.size >= size + maxRounding)) return undefined;
    pool.free.remove(found);
    return found;
  };

  /** map_block: maps the pages that hold the first `size` bytes of an unmapped block; false when the device cannot back them. */
  const mapBlock = (pool: Pool, block: Block, size: number): boolean => {
    const mapStart = block.address;
    const mappedBytes = pool.pageAddress(pool.pageUp(mapStart + size)) - mapStart;
    if (reserved + mappedBytes > capacityBytes) return false;
    pool.removeUnmapped(block);
    block.mapped = true;
    if (mappedBytes < block.size) {
      const rest = splice({ address: block.address + mappedBytes, size: block.size - mappedBytes, allocated: false, mapped: false, prev: undefined, next: undefined }, block, block.next);
      pool.insertUnmapped(rest);
      block.size = mappedBytes;
    }
    merge(pool, block, block.prev);
    merge(pool, block, block.next);
    pool.free.insert(block);
    reserved += mappedBytes;
    if (reserved > reservedPeak) reservedPeak = reserved;
    maps += 1;
    log?.push(mappedBytes);
    if (pages !== undefined) {
      mapStarts?.push(pages.length);
      for (let page = pool.pageDown(mapStart), end = page + mappedBytes / pool.pageBytes; page < end; page++) {
        pool.pageIndex[page] = pages.length;
        pages.push(pool.pageBytes);
      }
    }
    return true;
  };

  /** find_expandable_block: the lowest unmapped block, or the free block before it, with room for `size` bytes. */
  const expandableBlock = (pool: Pool, size: number): Block => {
    for (const unmapped of pool.unmapped) {
      const start = unmapped.prev !== undefined && !unmapped.prev.allocated ? unmapped.prev : unmapped;
      let room = 0;
      for (let b: Block | undefined = start; room < size && b !== undefined && !b.allocated; b = b.next) room += b.size;
      if (room >= size) return start;
    }
    return pool.newSegment();
  };

  /** try_allocate_expandable_block: maps what the request lacks; undefined when the device is full. */
  const allocateExpandable = (pool: Pool, size: number): Block | undefined => {
    let candidate = expandableBlock(pool, size);
    if (!candidate.mapped && !mapBlock(pool, candidate, Math.min(candidate.size, size))) return undefined;
    while (candidate.size < size) {
      const next = candidate.next!;
      if (!mapBlock(pool, next, Math.min(size - candidate.size, next.size))) return undefined;
      candidate = next;  // it took in the candidate (map_block's merge with its prev)
    }
    pool.free.remove(candidate);
    return candidate;
  };

  /** alloc_block: under a fraction, refused (as a failed map) where the request's segment would take the mapped bytes past the cap; else try_allocate_expandable_block. */
  const allocBlock = (pool: Pool, size: number): Block | undefined =>
    allowedBytes !== Number.POSITIVE_INFINITY && reserved + segmentSize(size, conf.largeSegmentSizeBytes) > allowedBytes ? undefined : allocateExpandable(pool, size);

  /** unmap_block: gives back the whole pages inside a cached free block. */
  const unmapBlock = (pool: Pool, block: Block): void => {
    const first = pool.pageUp(block.address);
    const last = pool.pageDown(block.address + block.size);
    if (first >= last) return;
    pool.free.remove(block);
    const start = pool.pageAddress(first);
    const size = pool.pageAddress(last) - start;
    const before = start - block.address;
    if (before > 0) pool.free.insert(splice({ address: block.address, size: before, allocated: false, mapped: true, prev: undefined, next: undefined }, block.prev, block));
    const after = block.size - before - size;
    if (after > 0) pool.free.insert(splice({ address: start + size, size: after, allocated: false, mapped: true, prev: undefined, next: undefined }, block, block.next));
    block.address = start;
    block.size = size;
    block.mapped = false;
    merge(pool, block, block.prev);
    merge(pool, block, block.next);
    pool.insertUnmapped(block);
    reserved -= size;
    unmaps += 1;
    log?.push(-size);
    if (pages !== undefined && releases !== undefined) {
      for (let page = first; page < last; page++) releases.push(pages.length, pool.pageIndex[page]!);
    }
  };

  /** release_cached_blocks → release_blocks, large pool first: unmap every cached free block's whole pages; drop a segment left wholly unmapped. */
  const releaseCached = (): void => {
    for (const pool of [large, small]) {
      for (const block of pool.free.all()) {
        unmapBlock(pool, block);
        if (block.prev === undefined && block.next === undefined && !block.mapped) pool.removeUnmapped(block);  // release_expandable_segment
      }
    }
  };

  let failedAt = -1;
  for (let k = 0; k < order.length; k++) {
    const code = order[k]!;
    if (code < 0) {
      // free → free_block: merge with free mapped neighbours, then cache.
      const block = live[~code];
      if (block === undefined) continue;
      live[~code] = undefined;
      const pool = block.size <= K_SMALL_SIZE ? small : large;  // an allocated block's size tells its pool
      block.allocated = false;
      allocated -= block.size;
      merge(pool, block, block.prev);
      merge(pool, block, block.next);
      pool.free.insert(block);
      continue;
    }
    if (bytes[code]! <= 0) continue;
    const size = roundSize(bytes[code]!, divisions);
    const pool = size <= K_SMALL_SIZE ? small : large;
    let block = freeBlock(pool, size) ?? allocBlock(pool, size);
    if (block === undefined) {
      // release_available_cached_blocks releases no expandable block: straight to release_cached_blocks.
      releaseCached();
      retries += 1;
      block = allocBlock(pool, size);
    }
    if (block === undefined) {
      failedAt = k;
      break;
    }
    // should_split with expandable segments, then alloc_found_block: the request keeps the front.
    if (block.size - size >= K_MIN_BLOCK_SIZE) {
      pool.free.insert(splice({ address: block.address + size, size: block.size - size, allocated: false, mapped: true, prev: undefined, next: undefined }, block, block.next));
      block.size = size;
    }
    block.allocated = true;
    allocated += block.size;
    if (allocated > allocatedPeak) allocatedPeak = allocated;
    live[code] = block;
  }
  const result: ExpandableReplayResult = replayResult({ reservedPeakBytes: reservedPeak, allocatedPeakBytes: allocatedPeak, cudaMallocs: maps, cudaFrees: unmaps, allocRetries: retries, failedAt });
  if (log !== undefined) result.mapLog = log;
  return result;
}

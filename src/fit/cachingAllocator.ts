// PyTorch's CUDA caching allocator, emulated: the segments a step's allocations and frees make it cudaMalloc.
//
// Rules and constants from c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, read at commit
// 001074d25084fdb87a799823e395a50f5ec044d3), with the allocator's default configuration
// (max_split_size unlimited, no roundup_power2_divisions, one stream):
// - round_size: every request is rounded up to a multiple of kMinBlockSize (512 B).
// - get_pool: requests ≤ kSmallSize (1 MiB) come from the small pool, larger ones from the large pool.
// - get_free_block: best fit, the smallest cached free block of the pool that is large enough
//   (the pool is a set ordered by size, then address: the lowest address wins a tie).
// - get_allocation_size: with no such block, cudaMalloc a new segment of kSmallBuffer (2 MiB)
//   for a small request, kLargeBuffer (20 MiB) for one under kMinLargeAlloc (10 MiB), else the
//   request rounded up to kRoundLarge (2 MiB).
// - should_split: the block is split when what remains is ≥ kMinBlockSize (small pool) or
//   > kSmallSize (large pool); the remainder stays cached in the pool.
// - free_block: a freed block merges with free neighbours of its segment (try_merge_blocks) and
//   is cached, never given back to the driver.
// Segments only grow (reserved memory is the sum of every segment). PyTorch's one exception —
// when cudaMalloc fails it frees cached segments that are entirely free and retries
// (release_cached_blocks) — is not emulated, so under memory pressure a real job can fit where
// this emulation already needs a new segment: the answer errs on the safe side.
import { traceOfEvents, type AllocationEvent, type AllocationTrace } from "../step/allocationTrace.js";

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

/** `round_size`: the block size PyTorch hands out for a request. */
export function roundSize(bytes: number): number {
  return bytes < K_MIN_BLOCK_SIZE ? K_MIN_BLOCK_SIZE : Math.ceil(bytes / K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE;
}

/** `get_allocation_size`: the segment cudaMalloc'd for a (rounded) request no cached block can hold. */
export function segmentSize(size: number): number {
  if (size <= K_SMALL_SIZE) return K_SMALL_BUFFER;
  if (size < K_MIN_LARGE_ALLOC) return K_LARGE_BUFFER;
  return Math.ceil(size / K_ROUND_LARGE) * K_ROUND_LARGE;
}

/** A piece of a segment: allocated to a tensor, or cached free. Neighbours are within the segment. */
export interface Block {
  address: number;
  size: number;
  allocated: boolean;
  prev: Block | undefined;
  next: Block | undefined;
}

/**
 * Free blocks ordered by size, then address: `get_free_block`'s best fit is a lower bound. Kept
 * as one address-ordered bucket per distinct size under a sorted list of the sizes: a deep model
 * caches tens of thousands of free blocks but only a few hundred distinct sizes, so insertion and
 * removal stay cheap (a flat sorted array made a deep model's replay take seconds).
 */
export class FreePool {
  /** The sizes that have at least one free block, ascending. */
  private readonly sizes: number[] = [];
  /** Free blocks of each size, by ascending address. */
  private readonly buckets = new Map<number, Block[]>();

  private static lowerBound<T>(list: readonly T[], below: (item: T) => boolean): number {
    let low = 0;
    let high = list.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (below(list[middle]!)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  insert(block: Block): void {
    let bucket = this.buckets.get(block.size);
    if (bucket === undefined) {
      this.buckets.set(block.size, (bucket = []));
      this.sizes.splice(FreePool.lowerBound(this.sizes, (s) => s < block.size), 0, block.size);
    }
    bucket.splice(FreePool.lowerBound(bucket, (b) => b.address < block.address), 0, block);
  }

  remove(block: Block): void {
    const bucket = this.buckets.get(block.size);
    const index = bucket === undefined ? -1 : FreePool.lowerBound(bucket, (b) => b.address < block.address);
    if (bucket === undefined || bucket[index] !== block) throw new Error("caching allocator emulation: block not in its pool");
    bucket.splice(index, 1);
    if (bucket.length === 0) this.dropSize(block.size);
  }

  /** The smallest free block of at least `size` bytes (lowest address first), taken out of the pool. */
  takeBestFit(size: number): Block | undefined {
    const index = FreePool.lowerBound(this.sizes, (s) => s < size);
    if (index === this.sizes.length) return undefined;
    const found = this.sizes[index]!;
    const bucket = this.buckets.get(found)!;
    const block = bucket.shift()!;
    if (bucket.length === 0) this.dropSize(found);
    return block;
  }

  private dropSize(size: number): void {
    this.buckets.delete(size);
    this.sizes.splice(FreePool.lowerBound(this.sizes, (s) => s < size), 1);
  }
}

/** Keeps `size` bytes of `block` and caches the rest, a block of its own, in `pool` (`alloc_found_block`). */
export function splitOff(block: Block, size: number, pool: FreePool): void {
  const remainder: Block = { address: block.address + size, size: block.size - size, allocated: false, prev: block, next: block.next };
  if (block.next !== undefined) block.next.prev = remainder;
  block.next = remainder;
  block.size = size;
  pool.insert(remainder);
}

/** `free_block`: frees a block, merging it with free neighbours, and caches it. */
export function freeBlock(block: Block, pool: FreePool): void {
  block.allocated = false;
  const prev = block.prev;
  if (prev !== undefined && !prev.allocated) {
    pool.remove(prev);
    block.address = prev.address;
    block.size += prev.size;
    block.prev = prev.prev;
    if (block.prev !== undefined) block.prev.next = block;
  }
  const next = block.next;
  if (next !== undefined && !next.allocated) {
    pool.remove(next);
    block.size += next.size;
    block.next = next.next;
    if (block.next !== undefined) block.next.prev = block;
  }
  pool.insert(block);
}

/** A step to replay: a plan's trace, or a list of events (tests, callers with their own steps). */
export type AllocationStep = AllocationTrace | readonly AllocationEvent[];

/** The step as a trace. */
export function asTrace(step: AllocationStep): AllocationTrace {
  return "order" in step ? step : traceOfEvents(step);
}

/**
 * Replays a step's allocations and frees through the caching allocator and returns the size of
 * every segment it cudaMallocs, in order: at the end of the step PyTorch holds all of them
 * (`torch.cuda.memory_reserved()` is their sum).
 */
export function cachingAllocatorSegments(step: AllocationStep): number[] {
  const { order, bytes } = asTrace(step);
  const small = new FreePool();
  const large = new FreePool();
  // Indexed by tensor: a Map cost most of a deep replay.
  const liveBlocks: (Block | undefined)[] = new Array<Block | undefined>(bytes.length);
  const segments: number[] = [];
  let nextAddress = 0;
  for (const code of order) {
    if (code < 0) {
      const block = liveBlocks[~code];
      if (block === undefined) continue;
      liveBlocks[~code] = undefined;
      // An allocated block's size tells its pool: small-pool blocks are split to the request (≤ 1 MiB,
      // sizes are multiples of 512 B), large-pool requests are over 1 MiB.
      freeBlock(block, block.size <= K_SMALL_SIZE ? small : large);
      continue;
    }
    if (bytes[code]! <= 0) continue;
    const size = roundSize(bytes[code]!);
    const isSmall = size <= K_SMALL_SIZE;
    const pool = isSmall ? small : large;
    let block = pool.takeBestFit(size);
    if (block === undefined) {
      const bytes = segmentSize(size);
      block = { address: nextAddress, size: bytes, allocated: false, prev: undefined, next: undefined };
      nextAddress += bytes;
      segments.push(bytes);
    }
    const remaining = block.size - size;
    if (isSmall ? remaining >= K_MIN_BLOCK_SIZE : remaining > K_SMALL_SIZE) splitOff(block, size, pool);
    block.allocated = true;
    liveBlocks[code] = block;
  }
  return segments;
}

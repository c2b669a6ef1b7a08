// PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), emulated: the pages a step maps.
//
// From c10/cuda/CUDACachingAllocator.cpp (same commit as cachingAllocator.ts), Note [Expandable
// Segments]: each pool has one segment whose address range is reserved once and backed by
// physical pages as it grows — pages of kSmallBuffer (2 MiB) in the small pool and kLargeBuffer
// (20 MiB) in the large pool (find_expandable_block), each created separately (cuMemCreate) and
// mapped at the end of the segment. Blocks are carved best-fit as in the caching allocator,
// except that the free block at the end of the mapped range counts as reaching into the unmapped
// space (get_free_block's expandable_size), so it is taken last; a request no free block can hold
// maps just enough pages after that end block (try_allocate_expandable_block). Blocks split
// whenever ≥ kMinBlockSize would remain (should_split with expandable segments). Pages stay mapped
// (unmapping happens only on out-of-memory or empty_cache), so the segment only grows, and there
// is no per-segment waste: the step needs its peak of live blocks, rounded up to whole pages.
import { K_LARGE_BUFFER, K_MIN_BLOCK_SIZE, K_SMALL_BUFFER, K_SMALL_SIZE, asTrace, roundSize, type AllocationStep } from "./cachingAllocator.js";

/** A piece of a segment: allocated to a tensor, or cached free. Neighbours are within the segment. */
interface Block {
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
class FreePool {
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
function splitOff(block: Block, size: number, pool: FreePool): void {
  const remainder: Block = { address: block.address + size, size: block.size - size, allocated: false, prev: block, next: block.next };
  if (block.next !== undefined) block.next.prev = remainder;
  block.next = remainder;
  block.size = size;
  pool.insert(remainder);
}

/** `free_block`: frees a block, merging it with free neighbours, and caches it. */
function freeBlock(block: Block, pool: FreePool): void {
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


/** One pool's segment: its mapped bytes and the block at the end of the mapped range. */
class ExpandableSegment {
  readonly free = new FreePool();
  mappedBytes = 0;
  last: Block | undefined;

  constructor(readonly pageBytes: number) {}

  /** The block for a rounded request: best fit among the free blocks before the end, else the end block, grown as needed. */
  allocate(size: number, pages: number[]): Block {
    const end = this.last !== undefined && !this.last.allocated ? this.last : undefined;
    if (end !== undefined) this.free.remove(end);
    let block = this.free.takeBestFit(size);
    if (end !== undefined) this.free.insert(end);
    if (block === undefined) block = this.grow(size, end, pages);
    if (block.size - size >= K_MIN_BLOCK_SIZE) {
      splitOff(block, size, this.free);
      if (this.last === block) this.last = block.next;
    }
    block.allocated = true;
    return block;
  }

  /** Maps pages after the mapped end until the end block holds `size` bytes, and takes it. */
  private grow(size: number, end: Block | undefined, pages: number[]): Block {
    const have = end?.size ?? 0;
    const count = Math.max(0, Math.ceil((size - have) / this.pageBytes));
    for (let i = 0; i < count; i++) pages.push(this.pageBytes);
    const added = count * this.pageBytes;
    if (end !== undefined) {
      this.free.remove(end);
      end.size += added;
      this.mappedBytes += added;
      return end;
    }
    const block: Block = { address: this.mappedBytes, size: added, allocated: false, prev: this.last, next: undefined };
    if (this.last !== undefined) this.last.next = block;
    this.last = block;
    this.mappedBytes += added;
    return block;
  }
}

/**
 * Replays a step's allocations and frees through expandable segments and returns every page
 * mapped, in order (2 MiB pages for the small pool, 20 MiB for the large one): what the job
 * holds at the end of the step.
 */
export function expandableSegmentPages(step: AllocationStep): number[] {
  const { order, bytes } = asTrace(step);
  const small = new ExpandableSegment(K_SMALL_BUFFER);
  const large = new ExpandableSegment(K_LARGE_BUFFER);
  const liveBlocks: (Block | undefined)[] = new Array<Block | undefined>(bytes.length);
  const pages: number[] = [];
  for (const code of order) {
    if (code < 0) {
      const block = liveBlocks[~code];
      if (block === undefined) continue;
      liveBlocks[~code] = undefined;
      // As in cachingAllocatorSegments, an allocated block's size tells its pool.
      const segment = block.size <= K_SMALL_SIZE ? small : large;
      freeBlock(block, segment.free);
      // A merge can swallow the end block: the freed block is the end of the mapped range then.
      if (block.next === undefined) segment.last = block;
      continue;
    }
    if (bytes[code]! <= 0) continue;
    const size = roundSize(bytes[code]!);
    liveBlocks[code] = (size <= K_SMALL_SIZE ? small : large).allocate(size, pages);
  }
  return pages;
}

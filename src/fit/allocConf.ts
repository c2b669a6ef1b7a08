// PYTORCH_CUDA_ALLOC_CONF as the caching-allocator emulation takes it: the settings that change which segments a step gets.
//
// Syntax and limits from PyTorch's parser (pytorch/pytorch c10/core/AllocatorConfig.cpp, read at
// commit 065861fba7598880aa3216822742a1172d0a197c: lexArgs, parseMaxSplitSize,
// parseMaxNonSplitRoundingSize, parseGarbageCollectionThreshold, parseRoundUpPower2Divisions,
// parseArgs), and torch 2.14.1's own header (torch/include/c10/core/AllocatorConfig.h):
// `key:value` pairs separated by commas, lists in brackets; blanks ignored; PYTORCH_CUDA_ALLOC_CONF
// wins over PYTORCH_ALLOC_CONF (allocConfFromEnvironment).
//
// The keys are exactly those torch 2.14.1 accepts: AcceleratorAllocatorConfig's (its libc10.so's
// parser: large_segment_size_mb, max_split_size_mb, max_non_split_rounding_mb,
// garbage_collection_threshold, roundup_power2_divisions, expandable_segments and the host
// allocator's pinned_use_background_threads, pinned_max_round_threshold_mb,
// pinned_max_cached_size_mb) and CUDAAllocatorConfig::getKeys() in the wheel's
// torch/include/c10/cuda/CUDAAllocatorConfig.h (backend, release_lock_on_cudamalloc,
// pinned_use_cuda_host_register, graph_capture_record_stream_reuse, pinned_reserve_segment_size_mb,
// pinned_num_register_threads, per_process_memory_fraction, pinned_free_catch_all,
// throw_on_cudamalloc_oom, and the ROCm spellings). Any other key makes PyTorch throw
// ("Unrecognized key"), and here one line. Limits checked against the wheel itself:
// large_segment_size_mb must be > 10 (its message), per_process_memory_fraction in [0, 1]
// (pytorch/pytorch c10/cuda/CUDAAllocatorConfig.cpp, parsePerProcessMemoryFraction).
import { invalidArgument } from "../errors.js";

const MiB = 2 ** 20;

/** `kRoundUpPowerOfTwoIntervals`: roundup_power2_divisions has one entry per power of two from 1 MiB to 32 GiB (and above). */
export const ROUNDUP_INTERVALS = 16;

/** The settings of PyTorch's CUDA caching allocator that change what a step allocates. */
export interface AllocConf {
  /** `max_split_size_mb` in bytes: blocks at least this large are never split (Infinity: unlimited, the default). */
  maxSplitSizeBytes: number;
  /** `max_non_split_rounding_mb` in bytes: how much larger an oversize cached block may be than the request it serves (default 20 MiB). */
  maxNonSplitRoundingBytes: number;
  /** `roundup_power2_divisions`, per power of two from 1 MiB (index 0) to ≥ 32 GiB (index 15); 0: plain 512 B rounding. */
  roundupPower2Divisions: readonly number[];
  /**
   * `garbage_collection_threshold` (0: off). PyTorch runs the collection only under a memory
   * fraction (`set_fraction` in CUDACachingAllocator.cpp's malloc and get_free_block): with
   * per_process_memory_fraction below 1 the replay collects as garbage_collect_cached_blocks does
   * (cachingAllocator.ts); without one it changes nothing, as in PyTorch.
   */
  garbageCollectionThreshold: number;
  /** `expandable_segments:True`. */
  expandableSegments: boolean;
  /**
   * `per_process_memory_fraction` (1: none). Below 1, torch 2.14.1 calls setMemoryFraction at
   * start: the allocator refuses a segment that would take its reserved bytes past
   * ⌊fraction × the device's total⌋ (allowed_memory_maximum), and takes its out-of-memory path as
   * for a failed cudaMalloc; at exactly 1 it sets nothing (measured on the wheel: no collection).
   */
  perProcessMemoryFraction: number;
  /** `large_segment_size_mb` in bytes (default 20 MiB, kLargeBuffer): the segment of a 1–10 MiB request, and the large pool's page with expandable segments. */
  largeSegmentSizeBytes: number;
  /** Keys given that do not change the job's device segments (pinned host memory, locking, graph capture), as `key:value`: accepted, named in the output as not modelled. */
  unmodelled: readonly string[];
}

export const DEFAULT_ALLOC_CONF: Readonly<AllocConf> = Object.freeze({
  maxSplitSizeBytes: Number.POSITIVE_INFINITY,
  maxNonSplitRoundingBytes: 20 * MiB,
  roundupPower2Divisions: Object.freeze(new Array<number>(ROUNDUP_INTERVALS).fill(0)),
  garbageCollectionThreshold: 0,
  expandableSegments: false,
  perProcessMemoryFraction: 1,
  largeSegmentSizeBytes: 20 * MiB,
  unmodelled: Object.freeze([]),
});

/**
 * Keys torch 2.14.1 accepts that do not change the device segments a step gets, with what their
 * value must be: the pinned host allocator's, the lock released around cudaMalloc (the same calls
 * in the same order), graph capture's stream reuse (no graphs in a step's replay).
 */
const UNMODELLED_KEYS: ReadonlyMap<string, "bool" | "count"> = new Map([
  ["release_lock_on_cudamalloc", "bool"], ["release_lock_on_hipmalloc", "bool"],
  ["pinned_use_cuda_host_register", "bool"], ["pinned_use_hip_host_register", "bool"],
  ["pinned_use_background_threads", "bool"], ["pinned_free_catch_all", "bool"],
  ["graph_capture_record_stream_reuse", "bool"],
  ["pinned_num_register_threads", "count"], ["pinned_reserve_segment_size_mb", "count"],
  ["pinned_max_round_threshold_mb", "count"], ["pinned_max_cached_size_mb", "count"],
]);

/** Every key torch 2.14.1 accepts, for the message that refuses another. */
const KNOWN_KEYS = ["max_split_size_mb", "max_non_split_rounding_mb", "roundup_power2_divisions", "garbage_collection_threshold", "expandable_segments", "per_process_memory_fraction", "large_segment_size_mb", "backend", "throw_on_cudamalloc_oom", ...UNMODELLED_KEYS.keys()];

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0 && n <= 2 ** 30;

/**
 * Parses a PYTORCH_CUDA_ALLOC_CONF value. Bad input throws one line naming `option` (PyTorch
 * itself refuses the same values at its first allocation: the job would not start).
 */
export function parseAllocConf(text: string, option = "--alloc-conf"): AllocConf {
  const tokens = text.split(/([,:[\]])/).map((t) => t.replace(/\s+/g, "")).filter((t) => t !== "");
  const unmodelled: string[] = [];
  const conf: AllocConf = { ...DEFAULT_ALLOC_CONF, roundupPower2Divisions: [...DEFAULT_ALLOC_CONF.roundupPower2Divisions], unmodelled };
  const bad = (expected: string) => invalidArgument(option, text, expected);
  const megabytes = (value: string | undefined, key: string) => {
    const mb = Number(value);
    if (value === undefined || !/^[0-9]+$/.test(value) || mb < 20) throw bad(`${key} as a whole number of MiB ≥ 20`);
    return mb * MiB;
  };
  const bool = (value: string | undefined, key: string) => {
    if (value !== "True" && value !== "False") throw bad(`${key}:True or ${key}:False`);
    return value === "True";
  };
  let i = 0;
  while (i < tokens.length) {
    const key = tokens[i]!;
    if (tokens[i + 1] !== ":") throw bad(`key:value pairs separated by commas, e.g. max_split_size_mb:128 (at ${JSON.stringify(key)})`);
    i += 2;
    const value = tokens[i];
    if (key === "max_split_size_mb") conf.maxSplitSizeBytes = megabytes(value, key);
    else if (key === "max_non_split_rounding_mb") conf.maxNonSplitRoundingBytes = megabytes(value, key);
    else if (key === "garbage_collection_threshold") {
      const threshold = Number(value);
      if (value === undefined || !(threshold > 0 && threshold < 1)) throw bad("garbage_collection_threshold between 0 and 1 (exclusive)");
      conf.garbageCollectionThreshold = threshold;
    } else if (key === "expandable_segments") conf.expandableSegments = bool(value, key);
    else if (key === "backend") {
      if (value !== "native") throw bad("backend:native (the caching allocator; cudaMallocAsync is not modelled)");
    } else if (key === "roundup_power2_divisions") i = parseDivisions(tokens, i, conf.roundupPower2Divisions as number[], bad);
    else if (key === "per_process_memory_fraction") {
      const fraction = Number(value);
      if (value === undefined || !/^([0-9]+\.?[0-9]*|\.[0-9]+)(e-?[0-9]+)?$/i.test(value) || !(fraction >= 0 && fraction <= 1)) throw bad("per_process_memory_fraction from 0 to 1");
      conf.perProcessMemoryFraction = fraction;
    } else if (key === "large_segment_size_mb") {
      const mb = Number(value);
      if (value === undefined || !/^[0-9]+$/.test(value) || !(mb > 10)) throw bad("large_segment_size_mb as a whole number of MiB > 10");
      conf.largeSegmentSizeBytes = mb * MiB;
    } else if (key === "throw_on_cudamalloc_oom") {
      // True makes PyTorch throw before its out-of-memory path frees the cache (measured on the
      // wheel: no retry), which the replay does not model; False is the default.
      if (bool(value, key)) throw bad("throw_on_cudamalloc_oom:False (True, which fails before the cache is freed, is not modelled)");
    } else if (UNMODELLED_KEYS.has(key)) {
      if (UNMODELLED_KEYS.get(key) === "bool") bool(value, key);
      else if (value === undefined || !/^[0-9]+$/.test(value)) throw bad(`${key} as a whole number`);
      unmodelled.push(`${key}:${value}`);
    } else {
      throw bad(`keys of torch 2.14.1's caching allocator: ${KNOWN_KEYS.join(", ")}`);
    }
    i += 1;
    if (i < tokens.length) {
      if (tokens[i] !== ",") throw bad("key:value pairs separated by commas");
      i += 1;
    }
  }
  return conf;
}

/** roundup_power2_divisions' value at `tokens[i]`: one power of two for every size, or `[MiB:divisions, …, >:divisions]`; returns the index of its last token. */
function parseDivisions(tokens: string[], i: number, divisions: number[], bad: (expected: string) => Error): number {
  const expected = "roundup_power2_divisions:N or roundup_power2_divisions:[MiB:N,…,>:N] with powers of two";
  if (tokens[i] !== "[") {
    const n = Number(tokens[i]);
    if (!isPowerOfTwo(n)) throw bad(expected);
    divisions.fill(n);
    return i;
  }
  let first = true;
  let lastIndex = 0;
  i += 1;
  while (tokens[i] !== "]") {
    const at = tokens[i];
    const n = Number(tokens[i + 2]);
    if (at === undefined || tokens[i + 1] !== ":" || !(n === 0 || isPowerOfTwo(n))) throw bad(expected);
    if (at === ">") divisions.fill(n, lastIndex);
    else {
      const mb = Number(at);
      if (!isPowerOfTwo(mb)) throw bad(expected);
      const index = Math.min(Math.log2(mb), ROUNDUP_INTERVALS - 1);
      if (first) divisions.fill(n, 0, index);
      first = false;
      divisions[index] = n;
      lastIndex = index;
    }
    i += 3;
    if (tokens[i] === ",") i += 1;
    else if (tokens[i] !== "]") throw bad(expected);
  }
  return i;
}

/** The configuration in PYTORCH_CUDA_ALLOC_CONF's own syntax, only what differs from the defaults ("" for none): what output says was modelled. */
export function formatAllocConf(conf: AllocConf): string {
  const parts: string[] = [];
  if (Number.isFinite(conf.maxSplitSizeBytes)) parts.push(`max_split_size_mb:${conf.maxSplitSizeBytes / MiB}`);
  if (conf.maxNonSplitRoundingBytes !== DEFAULT_ALLOC_CONF.maxNonSplitRoundingBytes) parts.push(`max_non_split_rounding_mb:${conf.maxNonSplitRoundingBytes / MiB}`);
  const d = conf.roundupPower2Divisions;
  if (d.some((n) => n !== 0)) {
    parts.push(d.every((n) => n === d[0]) ? `roundup_power2_divisions:${d[0]}` : `roundup_power2_divisions:[${d.map((n, k) => `${2 ** k}:${n}`).join(",")}]`);
  }
  if (conf.garbageCollectionThreshold > 0) parts.push(`garbage_collection_threshold:${conf.garbageCollectionThreshold}`);
  if (conf.expandableSegments) parts.push("expandable_segments:True");
  if (conf.perProcessMemoryFraction !== 1) parts.push(`per_process_memory_fraction:${conf.perProcessMemoryFraction}`);
  if (conf.largeSegmentSizeBytes !== DEFAULT_ALLOC_CONF.largeSegmentSizeBytes) parts.push(`large_segment_size_mb:${conf.largeSegmentSizeBytes / MiB}`);
  return parts.join(",");
}

/**
 * The configuration a job started with this environment gets: PYTORCH_CUDA_ALLOC_CONF where it is
 * set (even empty: then PyTorch's defaults), else PYTORCH_ALLOC_CONF. Measured on torch 2.14.1's
 * allocator (test/reference/allocConfGenuine.test.ts): with both set, every key of
 * PYTORCH_ALLOC_CONF is ignored, the device-generic ones (large_segment_size_mb) too, as
 * CUDAAllocatorConfig::instance() in the wheel's CUDAAllocatorConfig.h reads them in this order.
 */
export function allocConfFromEnvironment(env: Readonly<Record<string, string | undefined>>): { text: string; variable: string } | undefined {
  for (const variable of ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"]) {
    const text = env[variable];
    if (text !== undefined) return text.trim() === "" ? undefined : { text, variable };
  }
  return undefined;
}

/**
 * Where a configuration cannot go with the allocator the job asked for, one line naming `option`
 * (the library's `allocConf`, or the CLI's `--alloc-conf` / the variable it came from):
 * expandable_segments:False with `expandable`. (A memory fraction with expandable segments is
 * modelled: expandableSegments.ts, alloc_block's test of the segment before pages are mapped.)
 */
export function checkAllocConfWith(text: string, expandableAllocator: boolean, option: string): void {
  if (expandableAllocator && /expandable_segments\s*:\s*False/.test(text)) {
    throw invalidArgument(option, text, "no expandable_segments:False with the expandable allocator");
  }
}

/**
 * PyTorch's allowed_memory_maximum on a device of `totalBytes`: ⌊fraction × total⌋ in double
 * arithmetic (setMemoryFraction); Infinity where the configuration sets no fraction (1, PyTorch
 * then sets none) or the device's total is unknown.
 */
export function allowedMemoryBytes(conf: Pick<AllocConf, "perProcessMemoryFraction">, totalBytes: number | undefined): number {
  if (!(conf.perProcessMemoryFraction < 1) || totalBytes === undefined) return Number.POSITIVE_INFINITY;
  return Math.floor(conf.perProcessMemoryFraction * totalBytes);
}

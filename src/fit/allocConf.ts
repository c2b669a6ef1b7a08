// PYTORCH_CUDA_ALLOC_CONF as the caching-allocator emulation takes it: the settings that change which segments a step gets.
//
// Syntax and limits from PyTorch's parser (pytorch/pytorch c10/core/AllocatorConfig.cpp, read at
// commit 065861fba7598880aa3216822742a1172d0a197c: lexArgs, parseMaxSplitSize,
// parseMaxNonSplitRoundingSize, parseGarbageCollectionThreshold, parseRoundUpPower2Divisions,
// parseArgs), and torch 2.14.1's own header (torch/include/c10/core/AllocatorConfig.h):
// `key:value` pairs separated by commas, lists in brackets; blanks ignored; PYTORCH_ALLOC_CONF
// wins over PYTORCH_CUDA_ALLOC_CONF.
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
   * `garbage_collection_threshold` (0: off). PyTorch runs the collection only when the job also set
   * a memory fraction (`set_fraction` in CUDACachingAllocator.cpp's malloc and get_free_block),
   * which vramfit does not model: recorded and reported, no effect on the replay.
   */
  garbageCollectionThreshold: number;
  /** `expandable_segments:True`. */
  expandableSegments: boolean;
}

export const DEFAULT_ALLOC_CONF: Readonly<AllocConf> = Object.freeze({
  maxSplitSizeBytes: Number.POSITIVE_INFINITY,
  maxNonSplitRoundingBytes: 20 * MiB,
  roundupPower2Divisions: Object.freeze(new Array<number>(ROUNDUP_INTERVALS).fill(0)),
  garbageCollectionThreshold: 0,
  expandableSegments: false,
});

/** Keys PyTorch accepts that do not change device segments (pinned host memory, locking): accepted, not modelled. */
const IGNORED_KEYS = new Set(["release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_num_register_threads", "pinned_use_background_threads", "pinned_max_round_threshold", "pinned_max_cached_size"]);

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0 && n <= 2 ** 30;

/**
 * Parses a PYTORCH_CUDA_ALLOC_CONF value. Bad input throws one line naming `option` (PyTorch
 * itself refuses the same values at its first allocation: the job would not start).
 */
export function parseAllocConf(text: string, option = "--alloc-conf"): AllocConf {
  const tokens = text.split(/([,:[\]])/).map((t) => t.replace(/\s+/g, "")).filter((t) => t !== "");
  const conf: AllocConf = { ...DEFAULT_ALLOC_CONF, roundupPower2Divisions: [...DEFAULT_ALLOC_CONF.roundupPower2Divisions] };
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
    else if (IGNORED_KEYS.has(key)) {
      if (value === undefined || value === "," || value === "[") throw bad(`a value for ${key}`);
    } else {
      throw bad("keys of PyTorch's caching allocator: max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, garbage_collection_threshold, expandable_segments, backend");
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
  return parts.join(",");
}

/** The configuration a job started with this environment gets: PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF (as torch 2.14 reads them). */
export function allocConfFromEnvironment(env: Readonly<Record<string, string | undefined>>): { text: string; variable: string } | undefined {
  for (const variable of ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"]) {
    const text = env[variable];
    if (text !== undefined && text.trim() !== "") return { text, variable };
  }
  return undefined;
}

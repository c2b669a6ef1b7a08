// PYTORCH_CUDA_ALLOC_CONF as PyTorch's parser reads it (c10/core/AllocatorConfig.cpp): values, limits, refusals.
import { describe, expect, it } from "vitest";
import { allocConfFromEnvironment, DEFAULT_ALLOC_CONF, formatAllocConf, parseAllocConf } from "../../src/fit/allocConf.js";
import { jobModel } from "../../src/fit/charges.js";
import { allocConfLine } from "../../src/cli/jobOptions.js";

const MiB = 2 ** 20;

describe("parseAllocConf", () => {
  it("reads the keys that change segments, blanks ignored", () => {
    const conf = parseAllocConf(" max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:False ");
    expect(conf.maxSplitSizeBytes).toBe(128 * MiB);
    expect(conf.garbageCollectionThreshold).toBe(0.6);
    expect(conf.expandableSegments).toBe(false);
    expect(conf.maxNonSplitRoundingBytes).toBe(20 * MiB);
  });

  it("reads roundup_power2_divisions as one value or per power of two of MiB (parseRoundUpPower2Divisions)", () => {
    expect(parseAllocConf("roundup_power2_divisions:8").roundupPower2Divisions).toEqual(new Array(16).fill(8));
    // [64:8,256:4,1024:4,>:1]: 8 up to the 64 MiB interval (the first key fills those below it), 4 at
    // 256 MiB; `>` fills from the last key's interval on, its own included, so 1 GiB ends at 1 as in PyTorch.
    const d = parseAllocConf("roundup_power2_divisions:[64:8,256:4,1024:4,>:1]").roundupPower2Divisions;
    expect(d).toEqual([8, 8, 8, 8, 8, 8, 8, 0, 4, 0, 1, 1, 1, 1, 1, 1]);
  });

  it.each([
    ["max_split_size_mb:12", /max_split_size_mb as a whole number of MiB ≥ 20/],
    ["garbage_collection_threshold:1.5", /between 0 and 1/],
    ["expandable_segments:yes", /expandable_segments:True or expandable_segments:False/],
    ["roundup_power2_divisions:3", /powers of two/],
    ["backend:cudaMallocAsync", /cudaMallocAsync is not modelled/],
    ["max_spilt_size_mb:128", /keys of torch 2\.14\.1's caching allocator: .*per_process_memory_fraction/],
    ["per_process_memory_fraction:1.5", /per_process_memory_fraction from 0 to 1/],
    ["per_process_memory_fraction:half", /per_process_memory_fraction from 0 to 1/],
    ["large_segment_size_mb:10", /large_segment_size_mb as a whole number of MiB > 10/],
    ["throw_on_cudamalloc_oom:True", /throw_on_cudamalloc_oom:False \(True, which fails before the cache is freed, is not modelled\)/],
    ["release_lock_on_cudamalloc:yes", /release_lock_on_cudamalloc:True or release_lock_on_cudamalloc:False/],
    ["pinned_num_register_threads:x", /pinned_num_register_threads as a whole number/],
    // A key torch 2.14.1 does not know: an earlier spelling of a pinned key.
    ["pinned_max_round_threshold:4", /keys of torch 2\.14\.1's caching allocator/],
    ["max_split_size_mb", /key:value pairs/],
  ])("refuses %s in one line naming the option", (text, message) => {
    expect(() => parseAllocConf(text, "--alloc-conf")).toThrow(message);
    expect(() => parseAllocConf(text, "--alloc-conf")).toThrow(/^--alloc-conf: expected/);
  });

  it("writes back only what differs from PyTorch's defaults", () => {
    expect(formatAllocConf(DEFAULT_ALLOC_CONF)).toBe("");
    expect(formatAllocConf(parseAllocConf("expandable_segments:True,max_split_size_mb:256"))).toBe("max_split_size_mb:256,expandable_segments:True");
    expect(formatAllocConf(parseAllocConf(formatAllocConf(parseAllocConf("roundup_power2_divisions:[64:8,>:2]"))))).toBe(formatAllocConf(parseAllocConf("roundup_power2_divisions:[64:8,>:2]")));
  });

  it("takes PYTORCH_CUDA_ALLOC_CONF over PYTORCH_ALLOC_CONF, even empty, as torch 2.14.1 does (allocConfGenuine.test.ts measures it)", () => {
    expect(allocConfFromEnvironment({ PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:64", PYTORCH_ALLOC_CONF: "expandable_segments:True" })).toEqual({ text: "max_split_size_mb:64", variable: "PYTORCH_CUDA_ALLOC_CONF" });
    expect(allocConfFromEnvironment({ PYTORCH_ALLOC_CONF: "max_split_size_mb:64" })?.variable).toBe("PYTORCH_ALLOC_CONF");
    expect(allocConfFromEnvironment({ PYTORCH_CUDA_ALLOC_CONF: "", PYTORCH_ALLOC_CONF: "max_split_size_mb:64" })).toBeUndefined();
    expect(allocConfFromEnvironment({})).toBeUndefined();
  });

  it("reads per_process_memory_fraction and large_segment_size_mb, and keeps the keys that change no segment apart", () => {
    const conf = parseAllocConf("per_process_memory_fraction:0.25,large_segment_size_mb:40,release_lock_on_cudamalloc:True,pinned_num_register_threads:8,throw_on_cudamalloc_oom:False");
    expect(conf.perProcessMemoryFraction).toBe(0.25);
    expect(conf.largeSegmentSizeBytes).toBe(40 * MiB);
    expect(conf.unmodelled).toEqual(["release_lock_on_cudamalloc:True", "pinned_num_register_threads:8"]);
    // What was modelled, re-readable; the rest is not part of it.
    expect(formatAllocConf(conf)).toBe("per_process_memory_fraction:0.25,large_segment_size_mb:40");
    expect(parseAllocConf(formatAllocConf(conf)).perProcessMemoryFraction).toBe(0.25);
  });

  it("caps the allocator at ⌊fraction × the device's total⌋ only below a fraction of 1 (PyTorch then sets none)", () => {
    const total = 80 * 10 ** 9;
    expect(jobModel({ allocConf: "per_process_memory_fraction:0.3" }, total).allowedBytes).toBe(Math.floor(0.3 * total));
    expect(jobModel({ allocConf: "per_process_memory_fraction:1" }, total).allowedBytes).toBeUndefined();
    expect(jobModel({ allocConf: "max_split_size_mb:64" }, total).allowedBytes).toBeUndefined();
    // With expandable segments too (alloc_block tests the fraction before it maps pages: expandableSegments.ts).
    expect(jobModel({ allocConf: "expandable_segments:True,per_process_memory_fraction:0.5" }, total)).toMatchObject({ kind: "expandable", allowedBytes: Math.floor(0.5 * total) });
    expect(jobModel({ allocator: "expandable", allocConf: "per_process_memory_fraction:0.5" }, total)).toMatchObject({ kind: "expandable", allowedBytes: Math.floor(0.5 * total) });
  });

  it("models expandable_segments:True as the expandable allocator; raw takes no configuration", () => {
    expect(jobModel({ allocConf: "expandable_segments:True" }).kind).toBe("expandable");
    expect(jobModel({ allocator: "raw", allocConf: "max_split_size_mb:64" })).toEqual({ kind: "raw", contextBytes: 512 * MiB });
    expect(() => jobModel({ allocator: "expandable", allocConf: "expandable_segments:False" })).toThrow(/^allocConf: expected no expandable_segments:False/);
  });

  it("says which configuration was modelled and names the keys that do not affect the answer", () => {
    const line = allocConfLine({ allocConf: "release_lock_on_cudamalloc:True,per_process_memory_fraction:0.5,pinned_use_background_threads:True" }, {});
    expect(line).toBe("allocator PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.5, from --alloc-conf; not affecting the answer: release_lock_on_cudamalloc:True,pinned_use_background_threads:True");
    expect(allocConfLine({}, { PYTORCH_ALLOC_CONF: "max_split_size_mb:64", PYTORCH_CUDA_ALLOC_CONF: "large_segment_size_mb:40" })).toBe("allocator PYTORCH_CUDA_ALLOC_CONF=large_segment_size_mb:40, from PYTORCH_CUDA_ALLOC_CONF");
  });
});

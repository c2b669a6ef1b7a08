// PYTORCH_CUDA_ALLOC_CONF as PyTorch's parser reads it (c10/core/AllocatorConfig.cpp): values, limits, refusals.
import { describe, expect, it } from "vitest";
import { allocConfFromEnvironment, DEFAULT_ALLOC_CONF, formatAllocConf, parseAllocConf } from "../../src/fit/allocConf.js";
import { jobModel } from "../../src/fit/charges.js";

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
    ["max_spilt_size_mb:128", /keys of PyTorch's caching allocator/],
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

  it("takes PYTORCH_ALLOC_CONF over PYTORCH_CUDA_ALLOC_CONF, as torch 2.14 does", () => {
    expect(allocConfFromEnvironment({ PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:64", PYTORCH_ALLOC_CONF: "expandable_segments:True" })).toEqual({ text: "expandable_segments:True", variable: "PYTORCH_ALLOC_CONF" });
    expect(allocConfFromEnvironment({ PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:64" })?.variable).toBe("PYTORCH_CUDA_ALLOC_CONF");
    expect(allocConfFromEnvironment({})).toBeUndefined();
  });

  it("models expandable_segments:True as the expandable allocator; raw takes no configuration", () => {
    expect(jobModel({ allocConf: "expandable_segments:True" }).kind).toBe("expandable");
    expect(jobModel({ allocator: "raw", allocConf: "max_split_size_mb:64" })).toEqual({ kind: "raw", contextBytes: 512 * MiB });
    expect(() => jobModel({ allocator: "expandable", allocConf: "expandable_segments:False" })).toThrow(/^allocConf: expected no expandable_segments:False/);
  });
});

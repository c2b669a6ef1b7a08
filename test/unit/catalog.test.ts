import { describe, it, expect, vi } from "vitest";
import { GPU_CATALOG, findGpu } from "../../src/devices/catalog.js";
import { VramfitError, exitStatusOf } from "../../src/errors.js";
import { didYouMean, editDistance, nearest } from "../../src/suggest.js";

const GiB = 2 ** 30;

/** Runs `fn`, expecting a VramfitError, and returns it. */
function thrown(fn: () => unknown): VramfitError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(VramfitError);
    return error as VramfitError;
  }
  throw new Error("expected a throw");
}

describe("GPU_CATALOG", () => {
  it("has unique, well-formed ids", () => {
    const ids = GPU_CATALOG.map((gpu) => gpu.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$/);
  });

  it("puts the memory size in an id only as the nominal capacity", () => {
    for (const gpu of GPU_CATALOG) {
      const suffix = /-(\d+)GB$/.exec(gpu.id);
      if (suffix) expect(Number(suffix[1]) * GiB, gpu.id).toBe(gpu.nominalBytes);
    }
  });

  it("holds every GPU DESIGN.md names, under the driver's name", () => {
    const expected: Record<string, string> = {
      "A100-40GB": "NVIDIA A100-SXM4-40GB",
      "A100-80GB": "NVIDIA A100-SXM4-80GB",
      "H100-80GB": "NVIDIA H100 80GB HBM3", // the SXM part
      "H100-PCIE-80GB": "NVIDIA H100 PCIe",
      "H100-NVL-94GB": "NVIDIA H100 NVL",
      H200: "NVIDIA H200",
      B200: "NVIDIA B200",
      A40: "NVIDIA A40",
      "RTX-A6000": "NVIDIA RTX A6000",
      "RTX-6000-ADA": "NVIDIA RTX 6000 Ada Generation",
      L40S: "NVIDIA L40S",
      L4: "NVIDIA L4",
      A10: "NVIDIA A10",
      T4: "Tesla T4",
      "V100-16GB": "Tesla V100-SXM2-16GB",
      "V100-32GB": "Tesla V100-SXM2-32GB",
      "V100S-32GB": "Tesla V100S-PCIE-32GB",
      "RTX-3090": "NVIDIA GeForce RTX 3090",
      "RTX-4090": "NVIDIA GeForce RTX 4090",
      "JETSON-AGX-ORIN-32GB": "Orin",
      "JETSON-AGX-ORIN-64GB": "Orin",
    };
    const byId = new Map(GPU_CATALOG.map((gpu) => [gpu.id, gpu]));
    for (const [id, name] of Object.entries(expected)) {
      expect(byId.get(id)?.name, id).toBe(name);
    }
  });

  it("has totals the driver could report: below nominal by under 10%, or exactly nominal when marked", () => {
    for (const gpu of GPU_CATALOG) {
      expect(Number.isSafeInteger(gpu.totalBytes), gpu.id).toBe(true);
      expect(gpu.source.length, gpu.id).toBeGreaterThan(10);
      if (gpu.totalIsNominal) {
        expect(gpu.totalBytes, gpu.id).toBe(gpu.nominalBytes);
        expect(gpu.source, gpu.id).toMatch(/^nominal: .*datasheet/);
      } else {
        expect(gpu.totalBytes, gpu.id).toBeLessThan(gpu.nominalBytes);
        expect(gpu.totalBytes, gpu.id).toBeGreaterThanOrEqual(0.9 * gpu.nominalBytes);
        expect(gpu.source, gpu.id).not.toMatch(/^nominal/);
      }
    }
  });

  it("keeps the reported figures, not nvidia-smi's or the marketing sizes", () => {
    // deviceQuery: 81106 MBytes (85045477376 bytes); nvidia-smi would say 81559 MiB.
    expect(findGpu("H100-80GB").totalBytes).toBe(85045477376);
    expect(findGpu("A100-40GB").totalBytes).toBe(42298834944);
    // PyTorch total_memory=81008MB is MiB.
    expect(findGpu("H100-PCIE-80GB").totalBytes).toBe(81008 * 2 ** 20);
    expect(GPU_CATALOG.filter((gpu) => gpu.totalIsNominal).map((gpu) => gpu.id).sort()).toEqual([
      "GH200-144GB",
      "GH200-96GB",
      "JETSON-AGX-ORIN-32GB",
      "L40",
      "V100S-32GB",
    ]);
  });

  it("describes each GPU's hardware", () => {
    for (const gpu of GPU_CATALOG) {
      expect(gpu.computeCapability, gpu.id).toMatch(/^\d{1,2}\.\d$/);
      expect(gpu.integrated, gpu.id).toBe(gpu.id.startsWith("JETSON-"));
    }
    expect(findGpu("B200")).toMatchObject({ architecture: "Blackwell", computeCapability: "10.0", memoryType: "HBM3e" });
    expect(findGpu("L4")).toMatchObject({ architecture: "Ada Lovelace", computeCapability: "8.9", memoryType: "GDDR6" });
    expect(findGpu("JETSON-AGX-ORIN-64GB")).toMatchObject({ computeCapability: "8.7", memoryType: "LPDDR5" });
  });
});

describe("findGpu", () => {
  it("finds an id as the catalog spells it, before any lookup is built, as the entry the lookup gives", async () => {
    vi.resetModules(); // a fresh module: no lookup built yet, so the ids take findGpu's early path
    const fresh = await import("../../src/devices/catalog.js");
    const exact = fresh.GPU_CATALOG.map((gpu) => fresh.findGpu(gpu.id));
    fresh.GPU_CATALOG.forEach((gpu, i) => {
      expect(exact[i]).toBe(gpu);
      expect(fresh.findGpu(gpu.id.toLowerCase())).toBe(gpu); // through the lookup
    });
  });

  it("matches ids case-insensitively, with spaces or underscores for hyphens", () => {
    expect(findGpu("h100-80gb").id).toBe("H100-80GB");
    expect(findGpu("H100 80GB").id).toBe("H100-80GB");
    expect(findGpu(" h100_pcie_80gb ").id).toBe("H100-PCIE-80GB");
    expect(findGpu("rtx-4090").id).toBe("RTX-4090");
    expect(findGpu("jetson agx orin 32gb").id).toBe("JETSON-AGX-ORIN-32GB");
  });

  it("accepts aliases, a memory suffix on ids without one, and a unique driver name", () => {
    expect(findGpu("A100-SXM4-80GB").id).toBe("A100-80GB");
    expect(findGpu("t4-16gb").id).toBe("T4");
    expect(findGpu("H200-141GB").id).toBe("H200");
    expect(findGpu("NVIDIA H100 80GB HBM3").id).toBe("H100-80GB");
    expect(findGpu("Tesla V100S-PCIE-32GB").id).toBe("V100S-32GB");
    expect(findGpu("a6000").id).toBe("RTX-A6000");
  });

  it("suggests the nearest id for a typo, in one line naming --gpu and the value", () => {
    const error = thrown(() => findGpu("h100-80gv"));
    expect(error.code).toBe("ERR_UNKNOWN_GPU");
    expect(error.message).toContain("--gpu");
    expect(error.message).toContain('"h100-80gv"');
    expect(error.message).toContain("did you mean H100-80GB?");
    expect(error.message).toContain("vramfit gpus");
    expect(error.message).not.toContain("\n");
    expect(thrown(() => findGpu("rtx4090")).message).toContain("did you mean RTX-4090?");
    expect(thrown(() => findGpu("h100 pcie 80")).message).toContain("did you mean H100-PCIE-80GB?");
    expect(exitStatusOf(error)).toBe(2);
  });

  it("names the members of a family instead of guessing one", () => {
    const error = thrown(() => findGpu("a100"));
    expect(error.code).toBe("ERR_UNKNOWN_GPU");
    expect(error.message).toContain("A100-40GB, A100-80GB");
    expect(error.message).not.toContain("did you mean");
  });

  it("suggests nothing for a value near no id", () => {
    const error = thrown(() => findGpu("radeon"));
    expect(error.code).toBe("ERR_UNKNOWN_GPU");
    expect(error.message).not.toContain("did you mean");
    expect(thrown(() => findGpu("")).code).toBe("ERR_UNKNOWN_GPU");
  });
});

describe("nearest", () => {
  it("measures edit distance with adjacent transpositions costing 1", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("h100-80bg", "h100-80gb")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("abc", "abc")).toBe(0);
  });

  it("compares case-insensitively and returns the candidate as listed", () => {
    expect(nearest(["bert-large", "gpt2-xl"], "BERT-LARG")).toBe("bert-large");
    expect(nearest(["Llama-2-7B", "Llama-2-13B"], "llama-2-7")).toBe("Llama-2-7B");
  });

  it("breaks ties by order and respects maxDistance", () => {
    expect(nearest(["ab", "ba"], "aa")).toBe("ab");
    expect(nearest(["resnet50"], "resnet18")).toBe("resnet50");
    expect(nearest(["resnet50"], "resnet18", { maxDistance: 1 })).toBeUndefined();
    expect(nearest([], "x")).toBeUndefined();
    expect(nearest(["T4"], "  ")).toBeUndefined();
  });

  it("formats the tail of an error message", () => {
    expect(didYouMean(["adamw", "adam", "sgd"], "adamv")).toBe("; did you mean adamw?");
    expect(didYouMean(["adamw", "adam", "sgd"], "lion-optimizer")).toBe("");
  });
});

describe("findGpu on names users type (issue 13)", () => {
  it("knows the L40 and the GH200 rather than suggesting the L40S or the H200, different GPUs", () => {
    expect(findGpu("L40")).toMatchObject({ id: "L40", name: "NVIDIA L40", nominalBytes: 48 * GiB });
    // Two GH200s ship: the family name lists both instead of guessing.
    expect(thrown(() => findGpu("GH200")).message).toBe(
      '--gpu: expected a catalog GPU id, got "GH200", which fits more than one: GH200-96GB, GH200-144GB; run `vramfit gpus` for the catalog',
    );
    expect(findGpu("NVIDIA GH200 480GB").id).toBe("GH200-96GB");
    expect(findGpu("NVIDIA GH200 144G HBM3e").id).toBe("GH200-144GB");
  });

  it("reads full-width characters as their ASCII forms (NFKC)", () => {
    expect(findGpu("Ｈ100-80GB").id).toBe("H100-80GB");
    expect(findGpu("Ｈ１００－８０ＧＢ").id).toBe("H100-80GB");
  });
});


// The GPU catalog: GPU models that analytic targets (`--gpu H100-80GB`, `vramfit gpus`) stand for.
// Pure data and lookup, no I/O. docs/gpus.md lists the entries and where each figure comes from.
import { VramfitError } from "../errors.js";
import { didYouMean } from "../suggest.js";

export type GpuArchitecture = "Volta" | "Turing" | "Ampere" | "Ada Lovelace" | "Hopper" | "Blackwell";

export type GpuMemoryType = "HBM2" | "HBM2e" | "HBM3" | "HBM3e" | "GDDR6" | "GDDR6X" | "LPDDR5";

export interface CatalogGpu {
  /**
   * Upper-case, hyphen-separated: the model (`H100`, `RTX-4090`, `JETSON-AGX-ORIN`), then a
   * form-factor variant where the model ships in more than one and this is not the SXM part
   * (`-PCIE`, `-NVL`), then `-<N>GB` where the model ships in more than one memory size.
   */
  readonly id: string;
  /** The name the driver reports (cuDeviceGetName, nvidia-smi `name`), e.g. `NVIDIA H100 80GB HBM3`. */
  readonly name: string;
  /**
   * Total device memory as the CUDA driver reports it to a process: cudaMemGetInfo's total,
   * cuDeviceTotalMem, torch's `total_memory`, deviceQuery's "Total amount of global memory".
   * Less than nvidia-smi's `memory.total`, which includes memory the driver reserves for itself.
   * It moves by some MiB between driver versions and with ECC on or off. When `totalIsNominal`,
   * it is the nominal capacity instead (no reported figure was found).
   */
  readonly totalBytes: number;
  /** The marketed capacity ("80 GB"), read as GiB as memory capacities are binary. */
  readonly nominalBytes: number;
  /** True when `totalBytes` is the nominal capacity, not a figure the driver reported. */
  readonly totalIsNominal: boolean;
  /** Where `totalBytes` comes from (a deviceQuery or PyTorch output, or the datasheet). */
  readonly source: string;
  readonly architecture: GpuArchitecture;
  /** CUDA compute capability, `major.minor`. */
  readonly computeCapability: string;
  readonly memoryType: GpuMemoryType;
  /** Memory shared with the CPU (Jetson): the total is system RAM, and the OS uses part of it. */
  readonly integrated: boolean;
  /** Other spellings `findGpu` accepts (normalized like ids). */
  readonly aliases: readonly string[];
}

const GiB = 2 ** 30;

type Entry = Omit<CatalogGpu, "nominalBytes" | "totalIsNominal" | "totalBytes" | "integrated" | "aliases"> & {
  nominalGiB: number;
  /** Omitted: nominal. */
  totalBytes?: number;
  integrated?: boolean;
  aliases?: readonly string[];
};

/**
 * Fields written out, not a rest and a spread: the catalog is made at load, in every run of the
 * CLI, and V8 copies an object's rest and spread properties one by one through its runtime in cold
 * code (docs/benchmarks.md, "Tenth round"). The same fields in the same order. Every field of
 * CatalogGpu is required, so tsc names one left out here: keep them required.
 */
function entry(e: Entry): CatalogGpu {
  const nominalBytes = e.nominalGiB * GiB;
  return Object.freeze({
    id: e.id,
    name: e.name,
    source: e.source,
    architecture: e.architecture,
    computeCapability: e.computeCapability,
    memoryType: e.memoryType,
    totalBytes: e.totalBytes ?? nominalBytes,
    nominalBytes,
    totalIsNominal: e.totalBytes === undefined,
    integrated: e.integrated ?? false,
    aliases: Object.freeze(e.aliases === undefined ? [] : [...e.aliases]),
  });
}

const DEVICE_QUERY = "deviceQuery";
const THAMADA = "github.com/thamada/nvidia-smi";

export const GPU_CATALOG: readonly CatalogGpu[] = Object.freeze([
  // --- Volta ---
  entry({
    id: "V100-16GB",
    name: "Tesla V100-SXM2-16GB",
    totalBytes: 16928342016,
    nominalGiB: 16,
    source: `${DEVICE_QUERY} (driver 12.4): 16144 MBytes (16928342016 bytes), public deviceQuery dump`,
    architecture: "Volta",
    computeCapability: "7.0",
    memoryType: "HBM2",
    aliases: ["V100-SXM2-16GB"],
  }),
  entry({
    id: "V100-32GB",
    name: "Tesla V100-SXM2-32GB",
    totalBytes: 34072559616,
    nominalGiB: 32,
    source: `${DEVICE_QUERY} (driver 12.9): 32494 MBytes (34072559616 bytes), public CUDA course notes`,
    architecture: "Volta",
    computeCapability: "7.0",
    memoryType: "HBM2",
    aliases: ["V100-SXM2-32GB"],
  }),
  entry({
    id: "V100S-32GB",
    name: "Tesla V100S-PCIE-32GB",
    nominalGiB: 32,
    source: "nominal: NVIDIA V100S datasheet, 32 GB HBM2",
    architecture: "Volta",
    computeCapability: "7.0",
    memoryType: "HBM2",
    aliases: ["V100S-PCIE-32GB", "V100S"],
  }),
  // --- Turing ---
  entry({
    id: "T4",
    name: "Tesla T4",
    totalBytes: 15642329088,
    nominalGiB: 16,
    source: `${DEVICE_QUERY} (driver 12.5): 14918 MBytes (15642329088 bytes), public setup guide; nvidia-smi shows 15360 MiB`,
    architecture: "Turing",
    computeCapability: "7.5",
    memoryType: "GDDR6",
  }),
  // --- Ampere ---
  entry({
    id: "A100-40GB",
    name: "NVIDIA A100-SXM4-40GB",
    totalBytes: 42298834944,
    nominalGiB: 40,
    source: `${DEVICE_QUERY} (driver 12.2): 40339 MBytes (42298834944 bytes), bottlerocket-os/bottlerocket PR #3873`,
    architecture: "Ampere",
    computeCapability: "8.0",
    memoryType: "HBM2",
    aliases: ["A100-SXM4-40GB", "A100-SXM-40GB"],
  }),
  entry({
    id: "A100-80GB",
    name: "NVIDIA A100-SXM4-80GB",
    totalBytes: 85100068864,
    nominalGiB: 80,
    source: `${DEVICE_QUERY} (driver 12.5): 81158 MBytes (85100068864 bytes), ${THAMADA} nvsim/A100SXMx4_deviceQuery.py; nvidia-smi shows 81920 MiB`,
    architecture: "Ampere",
    computeCapability: "8.0",
    memoryType: "HBM2e",
    aliases: ["A100-SXM4-80GB", "A100-SXM-80GB"],
  }),
  entry({
    id: "A10",
    name: "NVIDIA A10",
    totalBytes: 23696375808,
    nominalGiB: 24,
    source: `${DEVICE_QUERY} (driver 12.8): 22599 MBytes (23696375808 bytes), public cuda-samples build notes`,
    architecture: "Ampere",
    computeCapability: "8.6",
    memoryType: "GDDR6",
  }),
  entry({
    id: "A40",
    name: "NVIDIA A40",
    totalBytes: 47608692736,
    nominalGiB: 48,
    source: `${DEVICE_QUERY} (driver 12.4): 45403 MBytes (47608692736 bytes), ${THAMADA} nvsim/A40x10_deviceQuery.py`,
    architecture: "Ampere",
    computeCapability: "8.6",
    memoryType: "GDDR6",
  }),
  entry({
    id: "RTX-A6000",
    name: "NVIDIA RTX A6000",
    totalBytes: 51160023040,
    nominalGiB: 48,
    source: `${DEVICE_QUERY} (driver 12.7): 48790 MBytes (51160023040 bytes), public HPC cluster docs`,
    architecture: "Ampere",
    computeCapability: "8.6",
    memoryType: "GDDR6",
    aliases: ["A6000"],
  }),
  entry({
    id: "RTX-3090",
    name: "NVIDIA GeForce RTX 3090",
    totalBytes: 25327697920,
    nominalGiB: 24,
    source: `${DEVICE_QUERY} (driver 12.6): 24154 MBytes (25327697920 bytes), ${THAMADA} gls/RTX3090_deviceQuery.py`,
    architecture: "Ampere",
    computeCapability: "8.6",
    memoryType: "GDDR6X",
  }),
  entry({
    id: "JETSON-AGX-ORIN-32GB",
    name: "Orin",
    nominalGiB: 32,
    source: "nominal: NVIDIA Jetson AGX Orin series datasheet, 32 GB LPDDR5 shared with the CPU",
    architecture: "Ampere",
    computeCapability: "8.7",
    memoryType: "LPDDR5",
    integrated: true,
  }),
  entry({
    id: "JETSON-AGX-ORIN-64GB",
    name: "Orin",
    totalBytes: 65893089280,
    nominalGiB: 64,
    source: `${DEVICE_QUERY} (JetPack 6, CUDA 12.6, 16 SMs): 62841 MBytes (65893089280 bytes), public Jetson setup guide`,
    architecture: "Ampere",
    computeCapability: "8.7",
    memoryType: "LPDDR5",
    integrated: true,
  }),
  // --- Ada Lovelace ---
  entry({
    id: "L4",
    name: "NVIDIA L4",
    totalBytes: 23570219008,
    nominalGiB: 24,
    source: `${DEVICE_QUERY} (driver 12.4): 22478 MBytes (23570219008 bytes), ${THAMADA} gls/L4_deviceQuery.py; nvidia-smi shows 23034 MiB`,
    architecture: "Ada Lovelace",
    computeCapability: "8.9",
    memoryType: "GDDR6",
  }),
  entry({
    id: "L40",
    name: "NVIDIA L40",
    nominalGiB: 48,
    source: "nominal: NVIDIA L40 datasheet (48 GB GDDR6 with ECC); no reported total found",
    architecture: "Ada Lovelace",
    computeCapability: "8.9",
    memoryType: "GDDR6",
  }),
  entry({
    id: "L40S",
    name: "NVIDIA L40S",
    totalBytes: 47576711168,
    nominalGiB: 48,
    source: `${DEVICE_QUERY} (driver 12.4): 45373 MBytes (47576711168 bytes), cuda-device-query crate README; nvidia-smi shows 46068 MiB`,
    architecture: "Ada Lovelace",
    computeCapability: "8.9",
    memoryType: "GDDR6",
  }),
  entry({
    id: "RTX-6000-ADA",
    name: "NVIDIA RTX 6000 Ada Generation",
    totalBytes: 51002867712,
    nominalGiB: 48,
    source: `${DEVICE_QUERY} (driver 12.4, ECC off): 48640 MBytes (51002867712 bytes), ${THAMADA} gls/RTX6000Ada_x8_deviceQuery.py`,
    architecture: "Ada Lovelace",
    computeCapability: "8.9",
    memoryType: "GDDR6",
  }),
  entry({
    id: "RTX-4090",
    name: "NVIDIA GeForce RTX 4090",
    totalBytes: 25386352640,
    nominalGiB: 24,
    source: `${DEVICE_QUERY} (driver 12.4): 24210 MBytes (25386352640 bytes), ${THAMADA} gls/RTX4090_deviceQuery.py`,
    architecture: "Ada Lovelace",
    computeCapability: "8.9",
    memoryType: "GDDR6X",
  }),
  // --- Hopper ---
  entry({
    id: "H100-80GB",
    name: "NVIDIA H100 80GB HBM3",
    totalBytes: 85045477376,
    nominalGiB: 80,
    source: `${DEVICE_QUERY} (driver 12.7): 81106 MBytes (85045477376 bytes), ${THAMADA} nvsim/H100SXMx8_deviceQuery.py; nvidia-smi shows 81559 MiB`,
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM3",
    aliases: ["H100-SXM-80GB", "H100-SXM5-80GB"],
  }),
  entry({
    id: "H100-PCIE-80GB",
    name: "NVIDIA H100 PCIe",
    totalBytes: 84943044608,
    nominalGiB: 80,
    source: "PyTorch get_device_properties: total_memory=81008MB (81008 MiB), in public code",
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM2e",
    aliases: ["H100-PCIE"],
  }),
  entry({
    id: "H100-NVL-94GB",
    name: "NVIDIA H100 NVL",
    totalBytes: 99861594112,
    nominalGiB: 94,
    source: `${DEVICE_QUERY} (driver 12.4): 95235 MBytes (99861594112 bytes), ${THAMADA} gls/H100NVLx2_deviceQuery.py; nvidia-smi shows 95830 MiB`,
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM3",
    aliases: ["H100-NVL"],
  }),
  entry({
    id: "H200",
    name: "NVIDIA H200",
    totalBytes: 150109945856,
    nominalGiB: 141,
    source: "PyTorch get_device_properties: total_memory=143156MB (143156 MiB), in public code (Modal H200)",
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM3e",
  }),
  // GH200: the Hopper GPU of a Grace Hopper superchip; "480GB" in the first one's name is the Grace CPU's LPDDR5X.
  entry({
    id: "GH200-96GB",
    name: "NVIDIA GH200 480GB",
    nominalGiB: 96,
    source: "nominal: NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3); no reported total found",
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM3",
  }),
  entry({
    id: "GH200-144GB",
    name: "NVIDIA GH200 144G HBM3e",
    nominalGiB: 144,
    source: "nominal: NVIDIA GH200 Grace Hopper Superchip datasheet (144 GB HBM3e); no reported total found",
    architecture: "Hopper",
    computeCapability: "9.0",
    memoryType: "HBM3e",
  }),
  // --- Blackwell ---
  entry({
    id: "B200",
    name: "NVIDIA B200",
    totalBytes: 191514017792,
    nominalGiB: 180,
    source: "PyTorch get_device_properties: total_memory=182642MB (182642 MiB), in public code (Modal B200)",
    architecture: "Blackwell",
    computeCapability: "10.0",
    memoryType: "HBM3e",
  }),
]);

/**
 * Upper case, spaces and underscores as hyphens: `h100 80gb` → `H100-80GB`. Compatibility forms
 * first (NFKC), so a full-width `Ｈ１００－８０ＧＢ` typed with an East Asian input method is `H100-80GB`.
 */
function normalize(text: string): string {
  return text.normalize("NFKC").trim().toUpperCase().replace(/[\s_]+/g, "-");
}

const MEMORY_SUFFIX = /-\d+GB$/;

/** Every spelling findGpu accepts, normalized, mapped to its entry. */
function buildLookup(): ReadonlyMap<string, CatalogGpu> {
  const map = new Map<string, CatalogGpu>();
  const add = (key: string, gpu: CatalogGpu): void => {
    const normalized = normalize(key);
    const existing = map.get(normalized);
    if (existing !== undefined && existing !== gpu) {
      throw new Error(`GPU catalog: ${normalized} names both ${existing.id} and ${gpu.id}`);
    }
    map.set(normalized, gpu);
  };
  for (const gpu of GPU_CATALOG) {
    add(gpu.id, gpu);
    // An id without its memory size also answers to `<id>-<N>GB`: T4-16GB, H200-141GB.
    if (!MEMORY_SUFFIX.test(gpu.id)) add(`${gpu.id}-${gpu.nominalBytes / GiB}GB`, gpu);
    for (const alias of gpu.aliases) add(alias, gpu);
  }
  // The driver's name, where exactly one entry has it (`NVIDIA H100 80GB HBM3`; not `Orin`).
  // Counted once per name: comparing every pair normalized both names each time, ~1 % of
  // `batch --model resnet152`'s start (`node --cpu-prof`).
  const sharing = new Map<string, number>();
  for (const gpu of GPU_CATALOG) {
    const name = normalize(gpu.name);
    sharing.set(name, (sharing.get(name) ?? 0) + 1);
  }
  for (const gpu of GPU_CATALOG) {
    const name = normalize(gpu.name);
    if (sharing.get(name) === 1 && !map.has(name)) add(gpu.name, gpu);
  }
  return map;
}

// Built on the first lookup, not at import: most commands never name a catalog GPU, and the CLI's
// cold start pays for every module's top-level work (docs/benchmarks.md).
let lookup: ReadonlyMap<string, CatalogGpu> | undefined;

/**
 * The catalog entry `query` names: an id (case-insensitive, spaces or underscores accepted for
 * hyphens), an alias, or the driver-reported name. Throws ERR_UNKNOWN_GPU otherwise, with one
 * line naming `--gpu`, the value, the nearest id and where the list is.
 */
export function findGpu(query: string): CatalogGpu {
  // An id as the catalog spells it (the CLI's fallback GPUs, most --gpu values) is its own entry
  // in the lookup too (buildLookup refuses a key naming two entries): found without building it,
  // which normalizes every id, alias and name (~0.6 ms of a cold start without a GPU).
  if (lookup === undefined) {
    for (const gpu of GPU_CATALOG) if (gpu.id === query) return gpu;
  }
  const key = normalize(query);
  const found = (lookup ??= buildLookup()).get(key);
  if (found !== undefined) return found;
  const shown = JSON.stringify(query);
  const listHint = "run `vramfit gpus` for the catalog";
  // A family name (`A100`) that several ids share: name them rather than guess.
  const family = GPU_CATALOG.filter((gpu) => key !== "" && gpu.id.startsWith(`${key}-`)).map((gpu) => gpu.id);
  if (family.length > 1) {
    throw new VramfitError(
      "ERR_UNKNOWN_GPU",
      `--gpu: expected a catalog GPU id, got ${shown}, which fits more than one: ${family.join(", ")}; ${listHint}`,
    );
  }
  // A bare number is a memory size, not a misspelt id: say how to give one, and the ids of that size.
  if (/^\d+(\.\d+)?$/.test(query.trim())) {
    const size = query.trim();
    const ofThatSize = GPU_CATALOG.filter((gpu) => gpu.id.endsWith(`-${size}GB`)).map((gpu) => gpu.id);
    const ids = ofThatSize.length > 0 ? `, or a GPU of that size: ${ofThatSize.join(", ")}` : "";
    throw new VramfitError("ERR_UNKNOWN_GPU", `--gpu: expected a catalog GPU id, got ${shown}; for ${size} GB of GPU memory give --memory ${size}GB${ids} (${listHint})`);
  }
  const mean = didYouMean(
    GPU_CATALOG.map((gpu) => gpu.id),
    key,
  );
  throw new VramfitError("ERR_UNKNOWN_GPU", `--gpu: expected a catalog GPU id, got ${shown}${mean} (${listHint})`);
}

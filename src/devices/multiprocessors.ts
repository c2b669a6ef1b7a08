// The catalog GPUs' streaming multiprocessors and L2 cache: what a simulated GPU answers for the
// device attributes PyTorch and its libraries size their kernels by (CUB divides by the SM count
// in embedding backward; cuBLAS and cuDNN heuristics read both). Pure data; the memory figures
// stay in catalog.ts.
import type { CatalogGpu } from "./catalog.js";

export interface Multiprocessors {
  /** cudaDevAttrMultiProcessorCount. */
  readonly count: number;
  /** cudaDevAttrL2CacheSize, bytes. */
  readonly l2CacheBytes: number;
  readonly source: string;
}

const MiB = 2 ** 20;

// Counts and L2 sizes from the architecture whitepapers and product datasheets (the enabled SMs of
// each product, not the full die), as deviceQuery prints them ("Multiprocessors", "L2 Cache Size").
const VOLTA = "NVIDIA Tesla V100 GPU Architecture whitepaper: 80 SMs, 6144 KB L2";
const TURING = "NVIDIA Turing GPU Architecture whitepaper, Tesla T4: 40 SMs, 4 MB L2";
const A100 = "NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs, 40 MB L2";
const GA102 = "NVIDIA Ampere GA102 GPU Architecture whitepaper";
const ADA = "NVIDIA Ada GPU Architecture whitepaper";
const HOPPER = "NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs (SXM5), 114 SMs (PCIe), 50 MB L2";
const ORIN = "NVIDIA Jetson AGX Orin series datasheet (2048 CUDA cores = 16 SMs on the 64GB, 1792 = 14 SMs on the 32GB), 4 MB L2";

const BY_ID: Readonly<Record<string, Multiprocessors>> = {
  "V100-16GB": { count: 80, l2CacheBytes: 6 * MiB, source: VOLTA },
  "V100-32GB": { count: 80, l2CacheBytes: 6 * MiB, source: VOLTA },
  "V100S-32GB": { count: 80, l2CacheBytes: 6 * MiB, source: `${VOLTA}; V100S datasheet: 5120 CUDA cores` },
  T4: { count: 40, l2CacheBytes: 4 * MiB, source: TURING },
  "A100-40GB": { count: 108, l2CacheBytes: 40 * MiB, source: A100 },
  "A100-80GB": { count: 108, l2CacheBytes: 40 * MiB, source: A100 },
  A10: { count: 72, l2CacheBytes: 6 * MiB, source: `${GA102}: A10, 72 SMs, 6 MB L2` },
  A40: { count: 84, l2CacheBytes: 6 * MiB, source: `${GA102}: A40, 84 SMs, 6 MB L2` },
  "RTX-A6000": { count: 84, l2CacheBytes: 6 * MiB, source: `${GA102}: RTX A6000, 84 SMs, 6 MB L2` },
  "RTX-3090": { count: 82, l2CacheBytes: 6 * MiB, source: `${GA102}: GeForce RTX 3090, 82 SMs, 6144 KB L2` },
  "JETSON-AGX-ORIN-32GB": { count: 14, l2CacheBytes: 4 * MiB, source: ORIN },
  "JETSON-AGX-ORIN-64GB": { count: 16, l2CacheBytes: 4 * MiB, source: ORIN },
  L4: { count: 58, l2CacheBytes: 48 * MiB, source: `${ADA}; L4 datasheet: 7424 CUDA cores = 58 SMs, 48 MB L2` },
  L40: { count: 142, l2CacheBytes: 96 * MiB, source: `${ADA}; L40 datasheet: 18176 CUDA cores = 142 SMs, 96 MB L2` },
  L40S: { count: 142, l2CacheBytes: 96 * MiB, source: `${ADA}; L40S datasheet: 18176 CUDA cores = 142 SMs, 96 MB L2` },
  "RTX-6000-ADA": { count: 142, l2CacheBytes: 96 * MiB, source: `${ADA}: RTX 6000 Ada, 142 SMs, 96 MB L2` },
  "RTX-4090": { count: 128, l2CacheBytes: 72 * MiB, source: `${ADA}: GeForce RTX 4090, 128 SMs, 72 MB L2` },
  "H100-80GB": { count: 132, l2CacheBytes: 50 * MiB, source: HOPPER },
  "H100-PCIE-80GB": { count: 114, l2CacheBytes: 50 * MiB, source: HOPPER },
  "H100-NVL-94GB": { count: 132, l2CacheBytes: 50 * MiB, source: `${HOPPER}; H100 NVL datasheet: 132 SMs per GPU` },
  H200: { count: 132, l2CacheBytes: 50 * MiB, source: `${HOPPER}; H200 is the SXM5 H100's GH100 configuration with 141 GB HBM3e` },
  "GH200-96GB": { count: 132, l2CacheBytes: 50 * MiB, source: `${HOPPER}; NVIDIA Grace Hopper Superchip Architecture whitepaper: 132 SMs` },
  "GH200-144GB": { count: 132, l2CacheBytes: 50 * MiB, source: `${HOPPER}; NVIDIA Grace Hopper Superchip Architecture whitepaper: 132 SMs` },
  B200: { count: 148, l2CacheBytes: 126 * MiB, source: "NVIDIA Blackwell Architecture Technical Brief: B200, 148 SMs (two dies of 74), 126 MB L2" },
};

/** The GPU's SM count and L2 size; undefined for a GPU this table does not know. */
export function multiprocessorsOf(gpu: Pick<CatalogGpu, "id">): Multiprocessors | undefined {
  return BY_ID[gpu.id];
}

/** Kept for tests: every id the table answers for. */
export const MULTIPROCESSOR_IDS: readonly string[] = Object.keys(BY_ID);

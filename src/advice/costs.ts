// What each way out of "does not fit" costs, with its source: the order advice is ranked in.
import { formatBytes } from "../units.js";

export type AdviceKind = "precision" | "attention" | "checkpointing" | "zero" | "offload" | "tp" | "seq" | "gpu" | "combined";

/**
 * A change's price: `rank` orders the advice (cheapest first; changes in the same whole class are
 * ordered by the GPUs they need, then by the fraction); `text` states it with its source; `short`
 * names it in a combination.
 */
export interface Cost {
  rank: number;
  text: string;
  short: string;
}

export const plural = (n: number) => `${n} GPU${n === 1 ? "" : "s"}`;

export const COSTS = {
  precision: (): Cost => ({
    rank: 0,
    short: "mixed precision",
    text: "no extra compute: 16-bit math on tensor cores is faster, fp32 master weights keep accuracy (Micikevicius et al. 2018)",
  }),
  attention: (): Cost => ({ rank: 0, short: "flash attention", text: "none: exact attention, faster than eager (Dao et al. 2022, FlashAttention)" }),
  selective: (): Cost => ({
    rank: 1,
    short: "≈ +3% compute",
    text: "≈ +3% compute: recomputes only the attention core (+2.7% FLOPs for GPT-3; Korthikanti et al. 2022, §5)",
  }),
  full: (): Cost => ({
    rank: 2,
    short: "≈ +33% compute",
    text: "≈ +33% compute: one more forward pass per step (Chen et al. 2016; Korthikanti et al. 2022, §5)",
  }),
  /** ZeRO over `gpus` data-parallel GPUs; `newGpus`: the user does not run on that many yet. */
  zero: (stage: 2 | 3, gpus: number, newGpus: boolean): Cost => {
    const traffic =
      stage === 2
        ? "communication as data parallelism, 2Ψ per step (Rajbhandari et al. 2020, §7)"
        : "1.5× data parallelism's communication, 3Ψ per step (Rajbhandari et al. 2020, §7)";
    return {
      // Scaling out to new GPUs (ZeRO or tensor parallelism) is one price class, ordered by GPU count.
      rank: stage === 2 ? (newGpus ? 5 : 1) : newGpus ? 5.1 : 3,
      short: `ZeRO-${stage}: ${stage === 2 ? "data parallelism's" : "1.5× data parallelism's"} communication`,
      text: `${newGpus ? `${plural(gpus)}; ` : ""}${traffic}`,
    };
  },
  offloadOptimizer: (hostBytes: number): Cost => ({
    rank: 4,
    short: `${formatBytes(hostBytes)} of host memory and PCIe traffic`,
    text: `needs ${formatBytes(hostBytes)} of host memory; 4Ψ bytes over PCIe per step and the optimizer step on the CPU (Ren et al. 2021, ZeRO-Offload)`,
  }),
  offloadParams: (hostBytes: number): Cost => ({
    rank: 8,
    short: `${formatBytes(hostBytes)} of host memory and the weights over PCIe`,
    text: `needs ${formatBytes(hostBytes)} of host memory; every layer's weights cross PCIe in each pass (Rajbhandari et al. 2021, ZeRO-Infinity)`,
  }),
  tp: (tp: number): Cost => ({
    rank: 5.2,
    short: `tensor parallelism over ${tp}`,
    text: `${plural(tp)} in one NVLink domain; 4 all-reduces of the activations per layer per step (Shoeybi et al. 2019, §3)`,
  }),
  seq: (seq: number): Cost => ({ rank: 9, short: `seq ${seq}`, text: `changes the workload: samples of at most ${seq} tokens` }),
  gpu: (id: string, totalBytes: number): Cost => ({ rank: 10, short: id, text: `different hardware: ${id} (${formatBytes(totalBytes)})` }),
} as const;

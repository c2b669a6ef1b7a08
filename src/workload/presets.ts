// The named models of `--model`: architectures from their papers and reference configs, never typed-in counts.
import { resnet, vgg16 } from "./cnnBuilders.js";
import { parameterCount } from "./parameterCount.js";
import { transformerActiveParameterCount, type TransformerArchitecture } from "./transformer.js";
import {
  bertArchitecture,
  gemma2Architecture,
  gemma3Architecture,
  gptArchitecture,
  llama3Architecture,
  llamaArchitecture,
  mixtralArchitecture,
  phi3Architecture,
  qwen2Architecture,
  qwen3Architecture,
  vitArchitecture,
} from "./transformerFamilies.js";
import { sd21UNet } from "./unet.js";
import type { CnnNetwork, CnnWorkload, TransformerWorkload, UNetWorkload } from "./workload.js";

type PresetWorkload = TransformerWorkload | CnnWorkload | UNetWorkload;

interface PresetEntry {
  description: string;
  /** Where the architecture comes from. */
  source: string;
  build: () => DistributiveOmit<PresetWorkload, "name">;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * A transformer preset's architecture is made the first time the preset is asked for, and the same
 * object after (plans are kept per architecture: src/plan/timelineCache.ts); made at load, the
 * twenty-odd of them were made in every run, `--params` included.
 */
const transformer = (make: () => TransformerArchitecture) => {
  let architecture: TransformerArchitecture | undefined;
  return () => ({ kind: "transformer" as const, architecture: (architecture ??= make()) });
};
const cnn = (network: () => CnnNetwork) => () => ({ kind: "cnn" as const, network: network() });

const PRESETS: Record<string, PresetEntry> = {
  resnet18: { description: "ResNet-18 (torchvision)", source: "He et al. 2016, Table 1", build: cnn(() => resnet(18)) },
  resnet34: { description: "ResNet-34 (torchvision)", source: "He et al. 2016, Table 1", build: cnn(() => resnet(34)) },
  resnet50: { description: "ResNet-50 v1.5 (torchvision)", source: "He et al. 2016, Table 1", build: cnn(() => resnet(50)) },
  resnet101: { description: "ResNet-101 v1.5 (torchvision)", source: "He et al. 2016, Table 1", build: cnn(() => resnet(101)) },
  resnet152: { description: "ResNet-152 v1.5 (torchvision)", source: "He et al. 2016, Table 1", build: cnn(() => resnet(152)) },
  vgg16: { description: "VGG-16, configuration D (torchvision)", source: "Simonyan & Zisserman 2015, Table 1", build: cnn(() => vgg16()) },
  "vit-b16": {
    description: "ViT-B/16 at 224² (torchvision vit_b_16)",
    source: "Dosovitskiy et al. 2021, Table 1",
    build: transformer(() => vitArchitecture({ hiddenSize: 768, layers: 12, heads: 12, ffnSize: 3072, patchSize: 16, imageSize: 224, classes: 1000 })),
  },
  "bert-base": { description: "BERT-base (BertModel with pooler)", source: "Devlin et al. 2019, §3", build: transformer(() => bertArchitecture({ hiddenSize: 768, layers: 12, heads: 12 })) },
  "bert-large": { description: "BERT-large (BertModel with pooler)", source: "Devlin et al. 2019, §3", build: transformer(() => bertArchitecture({ hiddenSize: 1024, layers: 24, heads: 16 })) },
  gpt2: { description: "GPT-2 small (124M)", source: "Radford et al. 2019, Table 2; HF gpt2 config", build: transformer(() => gptArchitecture({ hiddenSize: 768, layers: 12, heads: 12, maxPositions: 1024, activation: "gelu_new" })) },
  "gpt2-medium": { description: "GPT-2 medium (355M)", source: "Radford et al. 2019, Table 2", build: transformer(() => gptArchitecture({ hiddenSize: 1024, layers: 24, heads: 16, maxPositions: 1024, activation: "gelu_new" })) },
  "gpt2-large": { description: "GPT-2 large (774M)", source: "Radford et al. 2019, Table 2", build: transformer(() => gptArchitecture({ hiddenSize: 1280, layers: 36, heads: 20, maxPositions: 1024, activation: "gelu_new" })) },
  "gpt2-xl": { description: "GPT-2 XL (1.5B)", source: "Radford et al. 2019, Table 2", build: transformer(() => gptArchitecture({ hiddenSize: 1600, layers: 48, heads: 25, maxPositions: 1024, activation: "gelu_new" })) },
  "llama-2-7b": {
    description: "Llama 2 7B",
    source: "Touvron et al. 2023 (Llama 2), Table 1; HF config",
    build: transformer(() => llamaArchitecture({ hiddenSize: 4096, layers: 32, heads: 32, kvHeads: 32, ffnSize: 11008, vocabSize: 32000, maxPositions: 4096 })),
  },
  "llama-2-13b": {
    description: "Llama 2 13B",
    source: "Touvron et al. 2023 (Llama 2), Table 1; HF config",
    build: transformer(() => llamaArchitecture({ hiddenSize: 5120, layers: 40, heads: 40, kvHeads: 40, ffnSize: 13824, vocabSize: 32000, maxPositions: 4096 })),
  },
  "llama-2-70b": {
    description: "Llama 2 70B (grouped-query attention, 8 KV heads)",
    source: "Touvron et al. 2023 (Llama 2), Table 1; HF config",
    build: transformer(() => llamaArchitecture({ hiddenSize: 8192, layers: 80, heads: 64, kvHeads: 8, ffnSize: 28672, vocabSize: 32000, maxPositions: 4096 })),
  },
  "llama-3-8b": {
    description: "Llama 3 8B (grouped-query attention, 8 KV heads)",
    source: "Llama 3 model card; HF config",
    build: transformer(() => llamaArchitecture({ hiddenSize: 4096, layers: 32, heads: 32, kvHeads: 8, ffnSize: 14336, vocabSize: 128256, maxPositions: 8192 })),
  },
  "mistral-7b": {
    description: "Mistral 7B v0.1 (grouped-query attention, 8 KV heads)",
    source: "Jiang et al. 2023, Table 1",
    build: transformer(() => llamaArchitecture({ hiddenSize: 4096, layers: 32, heads: 32, kvHeads: 8, ffnSize: 14336, vocabSize: 32000, maxPositions: 8192 })),
  },
  "llama-3.1-8b": {
    description: "Llama 3.1 8B (128k context)",
    source: "HF meta-llama/Llama-3.1-8B config.json",
    build: transformer(() => llama3Architecture({ hiddenSize: 4096, layers: 32, heads: 32, kvHeads: 8, ffnSize: 14336, vocabSize: 128256, maxPositions: 131072, tieEmbeddings: false })),
  },
  "llama-3.2-1b": {
    description: "Llama 3.2 1B (tied embeddings)",
    source: "HF meta-llama/Llama-3.2-1B config.json",
    build: transformer(() => llama3Architecture({ hiddenSize: 2048, layers: 16, heads: 32, kvHeads: 8, headDim: 64, ffnSize: 8192, vocabSize: 128256, maxPositions: 131072, tieEmbeddings: true })),
  },
  "llama-3.2-3b": {
    description: "Llama 3.2 3B (tied embeddings)",
    source: "HF meta-llama/Llama-3.2-3B config.json",
    build: transformer(() => llama3Architecture({ hiddenSize: 3072, layers: 28, heads: 24, kvHeads: 8, headDim: 128, ffnSize: 8192, vocabSize: 128256, maxPositions: 131072, tieEmbeddings: true })),
  },
  "qwen2.5-7b": {
    description: "Qwen2.5 7B (QKV biases, 4 KV heads)",
    source: "HF Qwen/Qwen2.5-7B config.json",
    build: transformer(() => qwen2Architecture({ hiddenSize: 3584, layers: 28, heads: 28, kvHeads: 4, ffnSize: 18944, vocabSize: 152064, maxPositions: 131072, tieEmbeddings: false })),
  },
  "qwen3-8b": {
    description: "Qwen3 8B (Q/K norms)",
    source: "HF Qwen/Qwen3-8B config.json",
    build: transformer(() => qwen3Architecture({ hiddenSize: 4096, layers: 36, heads: 32, kvHeads: 8, headDim: 128, ffnSize: 12288, vocabSize: 151936, maxPositions: 40960, tieEmbeddings: false })),
  },
  "gemma-2-9b": {
    description: "Gemma 2 9B (head_dim 256, 256k vocabulary, local attention on every other layer)",
    source: "HF google/gemma-2-9b config.json",
    build: transformer(() => gemma2Architecture({ hiddenSize: 3584, layers: 42, heads: 16, kvHeads: 8, headDim: 256, ffnSize: 14336, vocabSize: 256000, maxPositions: 8192, tieEmbeddings: true }, 4096)),
  },
  "gemma-3-1b": {
    description: "Gemma 3 1B (Q/K norms, 262k vocabulary, 5 local layers per global one)",
    source: "HF google/gemma-3-1b-pt config.json",
    build: transformer(() => 
      gemma3Architecture(
        { hiddenSize: 1152, layers: 26, heads: 4, kvHeads: 1, headDim: 256, ffnSize: 6912, vocabSize: 262144, maxPositions: 32768, tieEmbeddings: true },
        512,
        Array.from({ length: 26 }, (_, i) => i).filter((i) => (i + 1) % 6 !== 0),
      ),
    ),
  },
  "phi-3-mini": {
    description: "Phi-3-mini 4k (fused qkv and gate_up projections)",
    source: "HF microsoft/Phi-3-mini-4k-instruct config.json",
    build: transformer(() => phi3Architecture({ hiddenSize: 3072, layers: 32, heads: 32, kvHeads: 32, ffnSize: 8192, vocabSize: 32064, maxPositions: 4096, tieEmbeddings: false })),
  },
  "mixtral-8x7b": {
    description: "Mixtral 8x7B (8 experts per layer, 2 per token)",
    source: "Jiang et al. 2024 (Mixtral of Experts), Table 1; HF mistralai/Mixtral-8x7B-v0.1 config.json",
    build: transformer(() => 
      mixtralArchitecture({ hiddenSize: 4096, layers: 32, heads: 32, kvHeads: 8, ffnSize: 14336, vocabSize: 32000, maxPositions: 32768, tieEmbeddings: false }, { count: 8, perToken: 2 }),
    ),
  },
  "sd2.1-unet": {
    description: "Stable Diffusion 2.1 UNet (768² images: 96² latents; text context 77 × 1024)",
    source: "HF stabilityai/stable-diffusion-2-1 unet/config.json (diffusers UNet2DConditionModel)",
    build: () => ({ kind: "unet", network: sd21UNet() }),
  },
  "gpt3-175b": {
    description: "GPT-3 175B",
    source: "Brown et al. 2020, Table 2.1",
    build: transformer(() => gptArchitecture({ hiddenSize: 12288, layers: 96, heads: 96, maxPositions: 2048 })),
  },
};

export function presetNames(): string[] {
  return Object.keys(PRESETS);
}

/** The preset's workload, or undefined for an unknown name. */
export function presetWorkload(name: string): PresetWorkload | undefined {
  const entry = Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
  if (!entry) return undefined;
  return { ...entry.build(), name } as PresetWorkload;
}

export interface PresetInfo {
  name: string;
  kind: PresetWorkload["kind"];
  description: string;
  source: string;
  /** Computed from the architecture. */
  parameterCount: number;
  /** Parameters each token runs through: fewer than `parameterCount` for a mixture of experts. */
  activeParameterCount: number;
}

/** The presets with their parameter counts, for `vramfit models`. */
export function listPresets(): PresetInfo[] {
  return presetNames().map((name) => {
    const workload = presetWorkload(name)!;
    const entry = PRESETS[name]!;
    const total = parameterCount(workload);
    const active = workload.kind === "transformer" ? transformerActiveParameterCount(workload.architecture) : total;
    return { name, kind: workload.kind, description: entry.description, source: entry.source, parameterCount: total, activeParameterCount: active };
  });
}

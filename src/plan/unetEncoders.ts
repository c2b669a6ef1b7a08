// The frozen models a Stable Diffusion UNet trains beside: its text encoder and its VAE.
import type { TransformerArchitecture } from "../workload/transformer.js";

/**
 * SD 2.x's text encoder: OpenCLIP ViT-H/14's text tower as Hugging Face's CLIPTextModel
 * (stabilityai/stable-diffusion-2-1, text_encoder/config.json: hidden 1024, 23 layers — SD 2
 * drops the last of 24 —, 16 heads, FFN 4096, 49,408 tokens, 77 positions): 340,387,840 parameters.
 */
export function clipTextEncoder(): TransformerArchitecture {
  return {
    kind: "encoder",
    hiddenSize: 1024,
    layers: 23,
    heads: 16,
    kvHeads: 16,
    headDim: 64,
    ffnSize: 4096,
    ffn: "mlp",
    vocabSize: 49408,
    positions: "learned",
    maxPositions: 77,
    tokenTypes: 0,
    norm: "layernorm",
    bias: true,
    tieEmbeddings: false,
    embeddingNorm: false,
    finalNorm: true,
    head: "none",
    classes: 0,
    dropout: 0,
    attentionDropout: 0,
  };
}

const conv = (inC: number, outC: number, kernel: number): number => outC * inC * kernel * kernel + outC;
const groupNorm = (c: number): number => 2 * c;
const resnet = (inC: number, outC: number): number => groupNorm(inC) + conv(inC, outC, 3) + groupNorm(outC) + conv(outC, outC, 3) + (inC !== outC ? conv(inC, outC, 1) : 0);
const attention = (c: number): number => groupNorm(c) + 4 * (c * c + c);

/**
 * SD's VAE (diffusers AutoencoderKL, stabilityai/stable-diffusion-2-1 vae/config.json: channels
 * 128/256/512/512, 2 resnets per encoder block and 3 per decoder block, a mid block with one
 * attention, 4 latent channels): 83,653,863 parameters.
 */
export function vaeParameterCount(): number {
  const channels = [128, 256, 512, 512];
  const mid = resnet(512, 512) + attention(512) + resnet(512, 512);
  let encoder = conv(3, 128, 3);
  let previous = 128;
  channels.forEach((c, i) => {
    encoder += resnet(previous, c) + resnet(c, c) + (i < channels.length - 1 ? conv(c, c, 3) : 0);
    previous = c;
  });
  encoder += mid + groupNorm(512) + conv(512, 8, 3);
  let decoder = conv(4, 512, 3) + mid;
  const reversed = [...channels].reverse();
  previous = reversed[0]!;
  reversed.forEach((c, i) => {
    for (let j = 0; j < 3; j++) decoder += resnet(j === 0 ? previous : c, c);
    previous = c;
    if (i < reversed.length - 1) decoder += conv(c, c, 3);
  });
  decoder += groupNorm(128) + conv(128, 3, 3);
  return encoder + decoder + conv(8, 8, 1) + conv(4, 4, 1); // + quant_conv, post_quant_conv
}

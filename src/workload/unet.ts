// Diffusion UNets (diffusers' UNet2DConditionModel): their configuration, parameter count, and what autograd saves.

/**
 * A conditional UNet as diffusers configures it (unet/config.json). The blocks run from the
 * highest resolution down and back up; `downAttention[i]` says whether down block i is a
 * CrossAttnDownBlock2D (a transformer after each resnet) or a DownBlock2D; `upAttention` the
 * same for the up blocks, in the order they run.
 */
export interface UNetConfig {
  inChannels: number;
  outChannels: number;
  blockOutChannels: number[];
  layersPerBlock: number;
  /** Width of the text context (1024: OpenCLIP ViT-H for SD 2.x). */
  crossAttentionDim: number;
  /** Tokens of the text context (77 for CLIP's tokenizer). */
  contextTokens: number;
  /** Attention heads per down block (diffusers' `attention_head_dim`, which SD 2.x uses as the head count). */
  heads: number[];
  downAttention: boolean[];
  upAttention: boolean[];
  normGroups: number;
  /** Query and key upcast to fp32 for the scores (`upcast_attention`, SD 2.1). */
  upcastAttention: boolean;
  /** The latent side the model was trained at (`sample_size`): 96 for SD 2.1 (768² images). */
  sampleSize: number;
  /** The VAE's downsampling: image side / latent side. */
  vaeScale: number;
}

/** stabilityai/stable-diffusion-2-1, unet/config.json. */
export function sd21UNet(): UNetConfig {
  return {
    inChannels: 4,
    outChannels: 4,
    blockOutChannels: [320, 640, 1280, 1280],
    layersPerBlock: 2,
    crossAttentionDim: 1024,
    contextTokens: 77,
    heads: [5, 10, 20, 20],
    downAttention: [true, true, true, false],
    upAttention: [false, true, true, true],
    normGroups: 32,
    upcastAttention: true,
    sampleSize: 96,
    vaeScale: 8,
  };
}

/**
 * What a saved storage holds: an activation in the run's dtype; fp32 whatever the dtype (upcast
 * attention, norm statistics); or `cast`, a copy in the run's dtype that exists only when that
 * dtype is not fp32 (upcast attention's probabilities cast back: in fp32 `.to()` returns the tensor itself).
 */
export type UNetSavedKind = "activation" | "float32" | "cast";

/** A storage autograd keeps for backward, `elements` per sample, saved in stage `stage`. */
export interface UNetSaved {
  name: string;
  elements: number;
  kind: UNetSavedKind;
  stage: number;
  /** The resnet or transformer module that saved it (an index into `modules`); -1 outside them. */
  module: number;
  /** Identifies the storage within the trace. */
  storage: number;
}

/** A resnet or transformer: what diffusers' gradient checkpointing wraps, one `torch.utils.checkpoint` each. */
export interface UNetModule {
  name: string;
  /** Its input's storage and elements per sample: what checkpointing keeps. */
  inputStorage: number;
  inputElements: number;
  stage: number;
}

export interface UNetTrace {
  parameterCount: number;
  /** Parameters per stage (the plan's parameter groups), in the order the stages run. */
  parameterGroups: { name: string; count: number }[];
  /** The stages in forward order: `conv_in`, `down_blocks.0` …, `mid_block`, `up_blocks.0` …, `conv_out`. */
  stages: string[];
  /** Storages saved for backward, each once. */
  saved: UNetSaved[];
  /** The checkpointable modules, in forward order. */
  modules: UNetModule[];
  /** Storages every module takes as an input besides its own (the time embedding, the text context): checkpointing keeps them. */
  sharedInputs: number[];
  /** Largest per-sample elements alive at once in a forward pass without autograd (inference). */
  inferencePeakElements: number;
}

interface Storage {
  id: number;
  elements: number;
}

/**
 * Runs the UNet symbolically on one sample with `latent`² latents and records what PyTorch's
 * autograd saves (the op sequence of diffusers' modules, as scripts/reference/sd21_unet.py rebuilds them):
 * GroupNorm, LayerNorm, SiLU, GeLU, convolutions and linears save their inputs (norms also fp32
 * mean and rstd per group or token); the element-wise product its two factors; attention the
 * head-major copies of Q, K, V and, eager (diffusers' AttnProcessor: baddbmm, softmax, bmm), the
 * softmax output, or with fused attention (SDPA) Q, K, V views, its output and fp32 logsumexp.
 * Skip connections are concatenated (nothing saved); nearest upsampling saves nothing.
 */
export function traceUNet(config: UNetConfig, latent: number, attention: "eager" | "flash"): UNetTrace {
  let nextId = 0;
  const saved = new Map<number, UNetSaved>();
  const parameterGroups: UNetTrace["parameterGroups"] = [];
  const stages: string[] = [];
  let stage = -1;
  let module = -1;
  const modules: UNetModule[] = [];
  let parameters = 0;
  let inferencePeak = 0;
  const held: Storage[] = []; // skip connections waiting for their up block
  const fresh = (elements: number): Storage => ({ id: nextId++, elements });
  const save = (storage: Storage, name: string, kind: UNetSavedKind = "activation"): void => {
    if (!saved.has(storage.id)) saved.set(storage.id, { name, elements: storage.elements, kind, stage, module, storage: storage.id });
  };
  const saveNew = (name: string, elements: number, kind: UNetSavedKind = "activation"): void => save(fresh(elements), name, kind);
  /** Inference: what an op needs alive besides the held skips. */
  const observe = (...alive: number[]): void => {
    const skips = held.reduce((sum, s) => sum + s.elements, 0);
    inferencePeak = Math.max(inferencePeak, skips + alive.reduce((a, b) => a + b, 0));
  };
  const beginStage = (name: string): void => {
    stages.push(name);
    stage += 1;
    parameterGroups.push({ name, count: 0 });
  };
  const addParameters = (count: number): void => {
    parameters += count;
    parameterGroups[parameterGroups.length - 1]!.count += count;
  };
  /** Runs `body` as one checkpointable module whose input is `x`. */
  const inModule = (name: string, x: Storage, body: () => Storage): Storage => {
    modules.push({ name, inputStorage: x.id, inputElements: x.elements, stage });
    module = modules.length - 1;
    const out = body();
    module = -1;
    return out;
  };
  const groups = config.normGroups;
  const temb = 4 * config.blockOutChannels[0]!;

  const groupNorm = (x: Storage, channels: number, n: number, name: string): Storage => {
    addParameters(2 * channels);
    save(x, `${name}.input`);
    saveNew(`${name}.mean_rstd`, 2 * groups, "float32");
    const out = fresh(channels * n);
    observe(x.elements, out.elements);
    return out;
  };
  const silu = (x: Storage, name: string): Storage => {
    save(x, `${name}.input`);
    const out = fresh(x.elements);
    observe(x.elements, out.elements);
    return out;
  };
  const conv = (x: Storage, inC: number, outC: number, kernel: number, nOut: number, name: string): Storage => {
    addParameters(outC * inC * kernel * kernel + outC);
    save(x, `${name}.input`);
    const out = fresh(outC * nOut);
    observe(x.elements, out.elements);
    return out;
  };
  const linear = (x: Storage, inF: number, outF: number, tokens: number, bias: boolean, name: string): Storage => {
    addParameters(inF * outF + (bias ? outF : 0));
    save(x, `${name}.input`);
    const out = fresh(outF * tokens);
    observe(x.elements, out.elements);
    return out;
  };

  /** ResnetBlock2D: norm1, SiLU, conv1, + time embedding, norm2, SiLU, conv2, + (shortcut) input. */
  const resnet = (x: Storage, emb: Storage, inC: number, outC: number, n: number, name: string): Storage => inModule(name, x, () => {
    let h = groupNorm(x, inC, n, `${name}.norm1`);
    h = silu(h, `${name}.nonlinearity1`);
    h = conv(h, inC, outC, 3, n, `${name}.conv1`);
    const t = silu(emb, `${name}.time_act`);
    linear(t, temb, outC, 1, true, `${name}.time_emb_proj`);
    h = fresh(outC * n); // h + temb
    h = groupNorm(h, outC, n, `${name}.norm2`);
    h = silu(h, `${name}.nonlinearity2`);
    h = conv(h, outC, outC, 3, n, `${name}.conv2`);
    if (inC !== outC) conv(x, inC, outC, 1, n, `${name}.conv_shortcut`);
    const out = fresh(outC * n);
    observe(x.elements, h.elements, out.elements);
    return out;
  });

  /** diffusers' Attention: Q from x, K and V from the context (itself for self-attention). */
  const attentionBlock = (x: Storage, context: Storage, c: number, contextWidth: number, n: number, m: number, heads: number, name: string): Storage => {
    linear(x, c, c, n, false, `${name}.to_q`);
    linear(context, contextWidth, c, m, false, `${name}.to_k`);
    linear(context, contextWidth, c, m, false, `${name}.to_v`);
    let output: Storage;
    if (attention === "flash") {
      // SDPA on views of Q, K, V; it keeps its output and an fp32 logsumexp per query and head.
      saveNew(`${name}.query`, c * n);
      saveNew(`${name}.key`, c * m);
      saveNew(`${name}.value`, c * m);
      saveNew(`${name}.sdpa_output`, c * n);
      saveNew(`${name}.logsumexp`, heads * n, "float32");
      observe(4 * c * n, 2 * c * m);
      output = fresh(c * n); // transposed back to tokens × channels: a copy
    } else {
      // head_to_batch_dim copies; upcast_attention makes fp32 copies of Q and K for baddbmm.
      const upcast = config.upcastAttention ? "float32" : "activation";
      saveNew(`${name}.query`, c * n, upcast);
      saveNew(`${name}.key`, c * m, upcast);
      saveNew(`${name}.value`, c * m);
      // softmax keeps its (upcast) output; bmm the probabilities cast back to the run's dtype
      // (the same storage when the run is fp32: PyTorch's .to() returns the tensor itself).
      saveNew(`${name}.softmax`, heads * n * m, upcast);
      if (config.upcastAttention) saveNew(`${name}.probs`, heads * n * m, "cast");
      observe(2 * heads * n * m, c * n, 2 * c * m);
      output = fresh(c * n); // batch_to_head_dim copy
    }
    linear(output, c, c, n, true, `${name}.to_out`);
    return fresh(c * n);
  };

  /** Transformer2DModel (use_linear_projection): GroupNorm, proj_in, one BasicTransformerBlock, proj_out, + input. */
  const transformer = (x: Storage, context: Storage, c: number, n: number, heads: number, name: string): Storage => inModule(name, x, () => {
    const normed = groupNorm(x, c, n, `${name}.norm`);
    const tokens = fresh(c * n); // permute + reshape: a copy
    observe(normed.elements, tokens.elements);
    let h = linear(tokens, c, c, n, true, `${name}.proj_in`);
    const block = `${name}.transformer_blocks.0`;
    const layerNorm = (input: Storage, norm: string): Storage => {
      addParameters(2 * c);
      save(input, `${norm}.input`);
      saveNew(`${norm}.mean_rstd`, 2 * n, "float32");
      return fresh(c * n);
    };
    let y = layerNorm(h, `${block}.norm1`);
    attentionBlock(y, y, c, c, n, n, heads, `${block}.attn1`);
    h = fresh(c * n);
    y = layerNorm(h, `${block}.norm2`);
    attentionBlock(y, context, c, config.crossAttentionDim, n, config.contextTokens, heads, `${block}.attn2`);
    h = fresh(c * n);
    y = layerNorm(h, `${block}.norm3`);
    // GEGLU: proj to 8c, chunk; gelu saves the gate, the product both factors (one storage), then the 4c product.
    const projected = linear(y, c, 8 * c, n, true, `${block}.ff.net.0.proj`);
    save(projected, `${block}.ff.net.0.proj_output`);
    saveNew(`${block}.ff.net.0.gelu_output`, 4 * c * n);
    const product = fresh(4 * c * n);
    observe(projected.elements, 4 * c * n, product.elements);
    linear(product, 4 * c, c, n, true, `${block}.ff.net.2`);
    h = fresh(c * n);
    linear(h, c, c, n, true, `${name}.proj_out`);
    return fresh(c * n); // back to channels-first (a copy) + residual
  });

  const channels = config.blockOutChannels;
  const sides = channels.map((_, i) => Math.max(1, Math.ceil(latent / 2 ** i)));
  const positions = (i: number): number => sides[i]! * sides[i]!;

  // The time embedding and conv_in run first: one stage.
  beginStage("conv_in");
  const sample = fresh(config.inChannels * latent * latent);
  const contextStorage = fresh(config.contextTokens * config.crossAttentionDim);
  const tProj = fresh(channels[0]!); // sinusoidal features: no parameters, no gradient
  const t1 = linear(tProj, channels[0]!, temb, 1, true, "time_embedding.linear_1");
  const t2 = silu(t1, "time_embedding.act");
  const emb = linear(t2, temb, temb, 1, true, "time_embedding.linear_2");
  let h = conv(sample, config.inChannels, channels[0]!, 3, positions(0), "conv_in");
  held.push(h);

  let outC = channels[0]!;
  channels.forEach((out, i) => {
    beginStage(`down_blocks.${i}`);
    const n = positions(i);
    let inC = outC;
    outC = out;
    for (let j = 0; j < config.layersPerBlock; j++) {
      h = resnet(h, emb, inC, outC, n, `down_blocks.${i}.resnets.${j}`);
      if (config.downAttention[i]) h = transformer(h, contextStorage, outC, n, config.heads[i]!, `down_blocks.${i}.attentions.${j}`);
      held.push(h);
      inC = outC;
    }
    if (i < channels.length - 1) {
      h = conv(h, outC, outC, 3, positions(i + 1), `down_blocks.${i}.downsamplers.0.conv`);
      held.push(h);
    }
  });

  beginStage("mid_block");
  const last = channels.length - 1;
  const top = channels[last]!;
  h = resnet(h, emb, top, top, positions(last), "mid_block.resnets.0");
  h = transformer(h, contextStorage, top, positions(last), config.heads[last]!, "mid_block.attentions.0");
  h = resnet(h, emb, top, top, positions(last), "mid_block.resnets.1");

  const reversedChannels = [...channels].reverse();
  const reversedHeads = [...config.heads].reverse();
  let prevOut = reversedChannels[0]!;
  reversedChannels.forEach((out, i) => {
    beginStage(`up_blocks.${i}`);
    const level = last - i;
    const n = positions(level);
    const inputChannel = reversedChannels[Math.min(i + 1, last)]!;
    const layers = config.layersPerBlock + 1;
    for (let j = 0; j < layers; j++) {
      const skip = held.pop()!;
      const skipChannels = j === layers - 1 ? inputChannel : out;
      const resnetIn = j === 0 ? prevOut : out;
      const joined = fresh((resnetIn + skipChannels) * n); // torch.cat: a new storage, saves nothing
      observe(h.elements, skip.elements, joined.elements);
      h = resnet(joined, emb, resnetIn + skipChannels, out, n, `up_blocks.${i}.resnets.${j}`);
      if (config.upAttention[i]) h = transformer(h, contextStorage, out, n, reversedHeads[i]!, `up_blocks.${i}.attentions.${j}`);
    }
    if (i < last) {
      const upsampled = fresh(out * positions(level - 1)); // nearest ×2: saves nothing
      observe(h.elements, upsampled.elements);
      h = conv(upsampled, out, out, 3, positions(level - 1), `up_blocks.${i}.upsamplers.0.conv`);
    }
    prevOut = out;
  });

  beginStage("conv_out");
  h = groupNorm(h, channels[0]!, positions(0), "conv_norm_out");
  h = silu(h, "conv_act");
  const prediction = conv(h, channels[0]!, config.outChannels, 3, positions(0), "conv_out");
  // The loss: MSE against the noise keeps the prediction and the target.
  save(prediction, "loss.prediction");
  saveNew("loss.target", config.outChannels * latent * latent);

  return { parameterCount: parameters, parameterGroups, stages, saved: [...saved.values()], modules, sharedInputs: [emb.id, contextStorage.id], inferencePeakElements: inferencePeak };
}

/** The UNet's parameters (its trace at the trained latent size). */
export function unetParameterCount(config: UNetConfig): number {
  return traceUNet(config, config.sampleSize, "flash").parameterCount;
}

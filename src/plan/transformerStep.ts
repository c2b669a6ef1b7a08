// A transformer's training step as autograd records it: embeddings, each layer op by op, the head and the loss.
import type { TransformerArchitecture } from "../workload/transformer.js";
import { layerLinears } from "../workload/transformer.js";
import { isFused, type AttentionKernel } from "./attentionKernel.js";
import { AUTOCAST_PREFIX } from "./autocast.js";
import { adaptedLinears, savesInputOf, type LoraSetup } from "./lora.js";
import { routedTokens } from "./moe.js";
import type { ResolvedSetup } from "./setup.js";
import { transformerStages } from "./stepPhases.js";
import { TrainingTape, type Size } from "./trainingTape.js";

/** The sizes that fix every activation: tokens, element bytes and the per-rank widths under tensor parallelism. */
export interface Shape {
  arch: TransformerArchitecture;
  /** Tokens per sample. */
  s: number;
  /** Bytes of one activation element: 4 in fp32, 2 in fp16/bf16/amp (under autocast: what matmuls make). */
  e: number;
  /**
   * torch.autocast over fp32 weights (src/plan/autocast.ts): each matmul casts its fp32 input and
   * its weight to `e` bytes (the weight once, into autocast's cache, saved until its backward).
   */
  autocast: boolean;
  /** Bytes of one element of the residual stream and the norms: 4 under autocast (fp32 embeddings, fp32 adds, layer_norm on autocast's fp32 list), else `e`. */
  r: number;
  /** Bytes of one weight (the tied embedding's gradient). */
  weightBytes: number;
  tp: number;
  sequenceParallel: boolean;
  /** The kernel every layer's attention runs (src/plan/attentionKernel.ts). */
  attention: AttentionKernel;
  /** Query heads, KV heads and FFN width on one tensor-parallel rank. */
  heads: number;
  kvHeads: number;
  ffn: number;
  /** Image side, for a vision transformer's patch embedding. */
  imageSize: number;
  /** LoRA adapters on a frozen model: a frozen linear layer saves nothing for backward. */
  lora?: LoraSetup;
  /** PEFT's `lora_dropout` on each adapter's input (0: `nn.Identity`, nothing kept). */
  loraDropout: number;
  /** Adapters kept in fp32 on a 16-bit model (PEFT's `autocast_adapter_dtype`, src/plan/transformerGroups.ts). */
  loraFp32: boolean;
  /**
   * 4-bit projections (`--weights nf4|int4`) keep their input for backward whenever it needs a
   * gradient: bitsandbytes' `MatMul4Bit.forward` sets `ctx.tensors = (A, B)` when
   * `any(ctx.needs_input_grad[:2])` (bitsandbytes/autograd/_functions.py), though B is frozen.
   */
  quantizedSavesInput: boolean;
  /** A mixture of experts' capacity factor (src/plan/moe.ts). */
  capacityFactor: number;
}

/** A tensor's name within its stage (`layers.3.attention` → `attention`), for the op's phase name. */
function local(prefix: string): string {
  return prefix.replace(/^layers\.\d+\.?|^(embeddings|head)\.?/, "");
}

const perSample = (bytes: number): Size => ({ fixedBytes: 0, perSampleBytes: bytes });
const fixed = (bytes: number): Size => ({ fixedBytes: bytes, perSampleBytes: 0 });

/**
 * Builds the tape. Which tensor is which follows Korthikanti et al. 2022, §4.1 (the names of
 * `docs/memory-model.md`'s table, each saved tensor named after the op that saves it), and the op
 * order and the copies made follow the Hugging Face implementations (transformers' modeling_gpt2.py,
 * modeling_bert.py, modeling_llama.py, eager attention):
 * - eager attention: `matmul` makes contiguous copies of the permuted Q, K and V (what the batched
 *   matmuls save), the scores are scaled and masked out of place (two more a·s² tensors in
 *   forward), softmax saves its output, dropout its 1-byte mask, and the heads are merged by a copy;
 * - flash (SDPA / FlashAttention): Q, K, V, the output and the fp32 logsumexp are saved;
 * - `gelu_new` (GPT-2's tanh approximation in Python) saves four f-wide tensors where a fused
 *   GeLU saves one;
 * - a decoder returns its KV cache (`use_cache=True`, Hugging Face's default, also when training):
 *   held until the outputs are dropped after the loss;
 * - a causal LM's loss shifts the logits by one position with a copy (`lm_logits[..., :-1,
 *   :].contiguous()`), upcasts them to fp32 under amp, and log_softmax saves its fp32 output.
 */
export function transformerTape(shape: Shape, setup: ResolvedSetup): TrainingTape {
  const { arch, s, e, r } = shape;
  const h = arch.hiddenSize;
  const d = arch.headDim;
  const tape = new TrainingTape(transformerStages(arch.layers));
  const loss = tape.lossStage;
  const sp = shape.sequenceParallel;
  /** A tensor outside the tensor-parallel region: split only under sequence parallelism. */
  const replicated = (bytes: number): Size => perSample(sp ? Math.ceil(bytes / shape.tp) : bytes);
  const split = perSample;
  /** The residual stream's width (fp32 under autocast). */
  const hidden = () => replicated(r * s * h);
  const heldKv = arch.kind === "decoder" && setup.checkpointing !== "full";

  const normStats = (stage: number, prefix: string) =>
    Array.from({ length: arch.norm === "layernorm" ? 2 : 1 }, (_, i) => ({
      name: `${prefix}.${arch.norm === "layernorm" ? ["mean", "rstd"][i] : "rstd"}`,
      size: replicated(4 * s),
      requiresGrad: false,
    })).map((o) => ({ ...o, stage }));
  /** A norm: saves its input and fp32 statistics. */
  const norm = (stage: number, prefix: string, input: number, outputName: string, group: string): number => {
    if (arch.norm === "rmsnorm") return rmsNorm(stage, prefix, input, outputName, group);
    const stats = normStats(stage, prefix);
    const [out, ...statValues] = tape.op(stage, local(prefix), [input], [{ name: outputName, size: hidden() }, ...stats], { groups: [group], trains: shape.lora === undefined });
    tape.ops.at(-1)!.saves.push(input, ...statValues);
    return out!;
  };
  /**
   * LlamaRMSNorm as Python runs it (transformers 5.18 modeling_llama.py lines 62-67):
   * `hidden_states.to(torch.float32)` (an fp32 copy of a 16-bit input, which `pow` saves), the
   * normalization in fp32 (`rsqrt` saved, the fp32 product a transient), `.to(input_dtype)` (the
   * normalized tensor, which `self.weight *` saves) and the weighted output. In fp32 the cast is the
   * input itself. Gemma's (the families with sandwich norms; modeling_gemma3.py Gemma3RMSNorm)
   * multiplies in fp32 first, `x_fp32 * rsqrt(...) * (1.0 + self.weight.float())`, then casts with
   * `type_as(x)`: the fp32 product is what the weight's product saves, and its result a transient
   * (counted in the torch 2.13 trace of Gemma-3-1B). `width` elements a token (the hidden size, or
   * a Q/K norm's heads × head size), `rows` fp32 statistics a token.
   */
  const rmsNorm = (stage: number, prefix: string, input: number, outputName: string, group: string, shapeOf = { width: h, rows: 1, size: replicated }): number => {
    const name = local(prefix);
    const { width, rows, size } = shapeOf;
    const fp32 = size(4 * s * width);
    const gemma = arch.sandwichNorms === true;
    const inputFp32 = tape.sizeOf(input).perSampleBytes === fp32.perSampleBytes;
    const inputSize = tape.sizeOf(input);
    const upcast = inputFp32 ? input : tape.op(stage, `${name}.upcast`, [input], [{ name: `${prefix}.input_fp32`, size: fp32 }])[0]!;
    const [normalized, rstd] = tape.op(stage, name, [upcast], [
      { name: `${prefix}.normalized`, size: gemma ? fp32 : inputSize },
      { name: `${prefix}.rstd`, size: size(4 * s * rows), requiresGrad: false },
    ], { forwardTemporaries: inputFp32 || gemma ? [] : [{ name: `${prefix}.normalized_fp32`, size: fp32 }] });
    tape.ops.at(-1)!.saves.push(upcast, rstd!);
    // `self.weight * x` keeps x for the weight's gradient only: a frozen norm (a LoRA model's) keeps nothing there.
    const [out] = tape.op(stage, `${name}.weight`, [normalized!], [{ name: outputName, size: inputSize }], {
      saves: shape.lora === undefined ? [normalized!] : [],
      groups: [group],
      trains: shape.lora === undefined,
      forwardTemporaries: gemma && !inputFp32 ? [{ name: `${prefix}.weighted_fp32`, size: fp32 }] : [],
    });
    return out!;
  };
  /** Dropout as CUDA runs it (native_dropout): its output, and a 1-byte mask it saves, named `<maskPrefix>_mask`. */
  const dropout = (stage: number, prefix: string, input: number, size: Size, outputName: string, p: number, maskSize: Size): number => {
    if (p <= 0) return input;
    const [out, mask] = tape.op(stage, `${local(prefix)}.dropout`.replace(/^\./, ""), [input], [
      { name: outputName, size },
      { name: `${prefix.replace(/\.residual$/, ".residual_dropout")}${prefix.endsWith(".residual") ? "" : ".dropout"}_mask`, size: maskSize, requiresGrad: false },
    ]);
    tape.ops.at(-1)!.saves.push(mask!);
    return out!;
  };

  // Embeddings (stage 0): the batch's token ids, the lookups, their sum, dropout.
  const ids = arch.vision
    ? tape.floatInput("inputs.pixel_values", "inputs.pixel_values_16bit", arch.vision.channels * shape.imageSize * shape.imageSize, e, setup.precision === "amp")
    : tape.input("inputs.input_ids", perSample(8 * s));
  const firstInputName = arch.postNorm ? "layers.0.attention.input" : "layers.0.norm1.input";
  let x: number;
  /** Lookups a base model keeps as locals until it returns (GPT2Model.forward's inputs_embeds and position_embeds). */
  const embeddingLocals: number[] = [];
  if (arch.vision) {
    // Under autocast the convolution runs in 16 bits (its weight cast into autocast's cache) and the class token's cat promotes back to fp32.
    const { vision } = arch;
    const patches = matmulOp(tape, shape, 0, "patch_embedding", "embeddings.patch", ids, { inFeatures: vision.channels * vision.patchSize ** 2, outFeatures: h, bias: true }, { name: "embeddings.patches", size: replicated(e * s * h) }, { groups: ["embeddings"], trains: true, savesInput: true, castsInput: false });
    const [tokens] = tape.op(0, "class_token", [patches], [{ name: "embeddings.tokens", size: hidden() }], { groups: ["embeddings"], passGradient: true });
    x = tape.op(0, "positions", [tokens!], [{ name: firstInputName, size: hidden() }], { groups: ["embeddings"], passGradient: true })[0]!;
  } else {
    const tied = arch.tieEmbeddings && arch.head === "lm" && shape.lora === undefined;
    // Frozen embeddings (a LoRA model's) need no gradient: backward stops at the first layer's input.
    const trains = shape.lora === undefined;
    const vocabRows = Math.ceil(arch.vocabSize / shape.tp);
    const [words] = tape.op(0, "word_embeddings", [ids], [{ name: "embeddings.words", size: hidden(), requiresGrad: trains }], {
      saves: [ids],
      groups: ["embeddings"],
      // embedding_dense_backward makes a dense gradient of the table; tied to the LM head, whose
      // backward made the table's gradient first, autograd's input buffer adds the two out of place
      // (the traces' `aten::add` at the embedding's backward, where Llama 3.2 at batch 4 with SGD
      // peaks): the contribution and the sum, each table-sized, beside the first gradient.
      backwardTemporaries: tied
        ? [
            { name: "embeddings.words.grad_contribution", size: fixed(vocabRows * h * shape.weightBytes) },
            { name: "embeddings.words.grad_sum", size: fixed(vocabRows * h * shape.weightBytes) },
          ]
        : [],
    });
    let sum = words!;
    if (arch.fusedQkv) embeddingLocals.push(words!);
    if (arch.tokenTypes > 0) {
      const [types] = tape.op(0, "token_type_embeddings", [ids], [{ name: "embeddings.token_types", size: hidden(), requiresGrad: trains }], { groups: ["embeddings"] });
      sum = tape.op(0, "add_token_types", [sum, types!], [{ name: arch.embeddingNorm ? "embeddings.norm.input" : "embeddings.sum", size: hidden() }], { passGradient: true })[0]!;
    }
    if (arch.positions === "learned") {
      // position_ids = arange(s), int64, which the lookup's backward keeps.
      const [positionIds] = tape.op(0, "position_ids", [], [{ name: "embeddings.position_ids", size: fixed(8 * s), requiresGrad: false }]);
      const [positions] = tape.op(0, "position_embeddings", [positionIds!], [{ name: "embeddings.positions", size: fixed(r * s * h), requiresGrad: trains }], { groups: ["embeddings"], saves: [positionIds!] });
      if (arch.fusedQkv) embeddingLocals.push(positions!);
      sum = arch.tokenTypes > 0
        ? tape.inPlace(0, "add_positions", sum, [positions!], { passGradient: true })
        : tape.op(0, "add_positions", [sum, positions!], [{ name: arch.embeddingNorm ? "embeddings.norm.input" : "embeddings.sum", size: hidden() }], { passGradient: true })[0]!;
    }
    if (arch.embeddingNorm) sum = norm(0, "embeddings.norm", sum, arch.dropout > 0 ? "embeddings.norm.output" : firstInputName, "embeddings");
    x = arch.dropout > 0 ? dropout(0, "embeddings", sum, hidden(), firstInputName, arch.dropout, replicated(s * h)) : sum;
  }

  for (let i = 0; i < arch.layers; i++) {
    const next = i + 1 < arch.layers ? (arch.postNorm ? `layers.${i + 1}.attention.input` : `layers.${i + 1}.norm1.input`) : arch.finalNorm ? "head.norm.input" : "head.input";
    x = (arch.postNorm ? postNormLayer : preNormLayer)(tape, shape, setup, i, x, next, { norm, rmsNorm, dropout, split, replicated, hidden, linearOutput: () => replicated(e * s * h), heldKv });
  }

  // The head (stage L + 1) and the loss.
  const head = arch.layers + 1;
  if (arch.finalNorm) x = norm(head, "head.norm", x, "head.input", "head");
  if (embeddingLocals.length > 0) tape.hold(...embeddingLocals);
  const labels = arch.head === "lm" ? ids : tape.input("inputs.labels", perSample(8));
  /**
   * Cross-entropy as `F.cross_entropy` runs it: log_softmax saves its fp32 output, nll_loss the
   * labels it reads (`target`) and its total weight. Logits in 16 bits are upcast to fp32 first
   * (transformers' `logits.float()`; under CUDA autocast log_softmax runs in fp32 as well).
   */
  const crossEntropy = (logits: number, rows: number, classes: number, target: number) => {
    let input = logits;
    if (e !== 4) input = tape.op(loss, "upcast", [logits], [{ name: "loss.logits_fp32", size: perSample(4 * rows * classes) }])[0]!;
    const [logSoftmax] = tape.op(loss, "log_softmax", [input], [{ name: "loss.log_softmax", size: perSample(4 * rows * classes) }]);
    tape.ops.at(-1)!.saves.push(logSoftmax!);
    // nll_loss returns the loss and its total weight (a scalar it saves).
    const [, totalWeight] = tape.op(loss, "nll_loss", [logSoftmax!, target], [
      { name: "loss.value", size: fixed(4) },
      { name: "loss.total_weight", size: fixed(4), requiresGrad: false },
    ]);
    tape.ops.at(-1)!.saves.push(target, totalWeight!);
  };
  const vocab = Math.ceil(arch.vocabSize / shape.tp);
  switch (arch.head) {
    case "lm": {
      // A frozen head (a LoRA model's) keeps no input: only the gradient to x is needed.
      const logitsSize = perSample(e * s * vocab);
      let logits = matmulOp(tape, shape, head, "lm_head", "head.lm_head", x, { inFeatures: h, outFeatures: vocab, bias: false }, { name: arch.finalLogitSoftcap ? "head.logits_uncapped" : "head.logits", size: logitsSize, heldToLoss: !arch.finalLogitSoftcap }, {
        groups: [arch.tieEmbeddings ? "embeddings" : "head"],
        trains: shape.lora === undefined,
        savesInput: shape.lora === undefined,
      });
      if (arch.finalLogitSoftcap) {
        // Gemma 2's `logits / cap`, `tanh`, `* cap` (transformers 5.18 modeling_gemma2.py lines 527-530): each a
        // logits-sized tensor; tanh saves its output for its backward, the scalings save nothing.
        const [scaled] = tape.op(head, "softcap.div", [logits], [{ name: "head.logits_scaled", size: logitsSize }]);
        const [tanh] = tape.op(head, "softcap.tanh", [scaled!], [{ name: "head.logits_tanh", size: logitsSize }]);
        tape.ops.at(-1)!.saves.push(tanh!);
        logits = tape.op(head, "softcap.mul", [tanh!], [{ name: "head.logits", size: logitsSize, heldToLoss: true }])[0]!;
      }
      if (setup.hfLoss === "legacy") {
        // transformers < 4.46 shifts the logits and the labels by one token with copies, kept until the model returns.
        const [shifted] = tape.views(loss, "shift_logits", logits, [perSample(e * (s - 1) * vocab)]);
        const [copy] = tape.op(loss, "shift_logits_copy", [shifted!], [{ name: "loss.shift_logits", size: perSample(e * (s - 1) * vocab), heldToLoss: true }], { passGradient: true });
        tape.op(loss, "shift_labels_copy", [], [{ name: "loss.shift_labels", size: perSample(8 * (s - 1)), requiresGrad: false, heldToLoss: true }]);
        crossEntropy(copy!, s - 1, vocab, labels);
      } else {
        // transformers ≥ 4.46 (ForCausalLMLoss, transformers 5.18 loss/loss_utils.py lines 58-70):
        // `logits.float()` once, the labels padded by one `ignore_index` and shifted
        // (`pad(labels, (0, 1))[..., 1:].contiguous()`), every position's logits into the loss.
        const [padded] = tape.op(loss, "pad_labels", [], [{ name: "loss.padded_labels", size: perSample(8 * (s + 1)), requiresGrad: false }]);
        const [shiftLabels] = tape.op(loss, "shift_labels_copy", [padded!], [{ name: "loss.shift_labels", size: perSample(8 * s), requiresGrad: false }]);
        crossEntropy(logits, s, vocab, shiftLabels!);
      }
      break;
    }
    case "pooler":
    case "classifier": {
      // A view of the first token, `hidden_states[:, 0]` (a slice, then a select): the linear saves
      // it, keeping the whole last hidden state; each view's backward makes a full-size gradient.
      const [sliced] = tape.views(head, "slice", x, [hidden()]);
      const [first] = tape.views(head, "first_token", sliced!, [perSample(r * h)]);
      let out = first!;
      if (arch.head === "pooler") {
        out = matmulOp(tape, shape, head, "pooler", "head.pooler", out, { inFeatures: h, outFeatures: h, bias: true }, { name: "head.pooler.output", size: perSample(e * h) }, { groups: ["head"], trains: true, savesInput: true, rows: 1 });
        const [tanh] = tape.op(head, "tanh", [out], [{ name: "head.pooler.tanh", size: perSample(e * h) }], { groups: ["head"] });
        tape.ops.at(-1)!.saves.push(tanh!);
        out = tanh!;
      }
      if (arch.classes > 0) {
        if (arch.head === "pooler") out = dropout(head, "head", out, perSample(e * h), "head.classifier.input", arch.dropout, perSample(h));
        const logits = matmulOp(tape, shape, head, "classifier", "head.classifier", out, { inFeatures: h, outFeatures: arch.classes, bias: true }, { name: "head.logits", size: perSample(e * arch.classes) }, { groups: ["head"], trains: true, savesInput: true, rows: 1 });
        crossEntropy(logits, 1, arch.classes, labels);
      } else {
        tape.op(loss, "sum", [out], [{ name: "loss.value", size: fixed(4) }]);
      }
      break;
    }
    case "none":
      tape.op(loss, "sum", [x], [{ name: "loss.value", size: fixed(4) }]);
      break;
  }
  return tape;
}

/** An output a linear layer makes: its name and size, and where it goes (category, held by the model's outputs). */
interface LinearOutput {
  name: string;
  size: Size;
  category?: "activations" | "workspace" | "kvCache";
  heldToLoss?: boolean;
}

/** A weight matrix as a matmul sees it: `inFeatures × outFeatures`, and whether a bias is added. */
interface MatmulWeight {
  inFeatures: number;
  outFeatures: number;
  bias?: boolean;
}

/**
 * One matmul by a weight (a linear layer, the LM head, a patch convolution). Without autocast: the
 * op, saving its input when asked. Under autocast (torch 2.13 traces, `vramfit trace --precision
 * amp`, one op each): an fp32 input is cast to a 16-bit copy, which the matmul saves instead
 * (each matmul casts its own: Llama's q, k and v projections make three copies of one norm
 * output); the weight's 16-bit copy (`autocast.<name>.weight`) is made once and saved until the
 * op's backward (frozen weights are not cached, but still saved while the input needs a
 * gradient); a bias's copy stays in autocast's cache until the region exits after the loss. In
 * backward the copy also stands for the weight's 16-bit gradient (src/plan/autocast.ts).
 */
function matmulOp(
  tape: TrainingTape,
  shape: Shape,
  stage: number,
  opName: string,
  name: string,
  input: number,
  weight: MatmulWeight,
  output: LinearOutput,
  options: { groups: string[]; trains: boolean; savesInput: boolean; castsInput?: boolean; rows?: number },
): number {
  if (!shape.autocast) {
    return tape.op(stage, opName, [input], [output], { saves: options.savesInput ? [input] : [], groups: options.groups, trains: options.trains })[0]!;
  }
  const { e } = shape;
  const elements = weight.inFeatures * weight.outFeatures;
  // The input is fp32 when it is 4 bytes an element (autocast implies no tensor parallelism: its width is inFeatures).
  const rows = options.rows ?? shape.s;
  const inputFp32 = (options.castsInput ?? true) && tape.sizeOf(input).perSampleBytes === 4 * rows * weight.inFeatures;
  const x = inputFp32 ? tape.op(stage, `${opName}.cast_input`, [input], [{ name: `${name}.input_16bit`, size: perSample(e * rows * weight.inFeatures) }])[0]! : input;
  const needed = options.trains || tape.requiresGrad(x);
  const copies: { name: string; size: Size; category?: "activations" | "workspace"; requiresGrad: boolean; heldToLoss?: boolean }[] = [
    { name: `${AUTOCAST_PREFIX}${name}.weight`, size: fixed(e * elements), category: needed ? "activations" : "workspace", requiresGrad: false },
  ];
  if (weight.bias) copies.push({ name: `${AUTOCAST_PREFIX}${name}.bias`, size: fixed(e * weight.outFeatures), category: "workspace", requiresGrad: false, heldToLoss: options.trains });
  const [out, weightCopy] = tape.op(stage, opName, [x], [output, ...copies], {
    saves: options.savesInput ? [x] : [],
    groups: options.groups,
    trains: options.trains,
  });
  if (needed) tape.ops.at(-1)!.saves.push(weightCopy!);
  return out!;
}

/**
 * A linear layer of layer `p` (its name in layerLinears: q, k, v, qkv, o, up, gate, down, …). It
 * saves its input when its weight trains, or when an adapter on it does (a frozen matrix needs no
 * input for the gradient it passes back). With a LoRA adapter (PEFT: `result = base(x) +
 * lora_B(lora_A(x)) * scaling`, no dropout by default) A saves x, B saves A's r-wide output, and
 * B's output and its scaled copy are temporaries added to the frozen output.
 */
function linearOp(tape: TrainingTape, shape: Shape, stage: number, p: string, name: string, opName: string, input: number, output: LinearOutput): number {
  const adapter = shape.lora ? adaptedLinears(shape.arch, shape.lora).find((l) => l.name === name) : undefined;
  const keeps = shape.lora === undefined || adapter !== undefined;
  // A frozen 4-bit matrix (QLoRA) keeps its input when that input needs a gradient (layers past the first adapter).
  const quantizedKeeps = shape.quantizedSavesInput && tape.requiresGrad(input);
  const weight = layerLinears(shape.arch).find((l) => l.name === name) ?? { inFeatures: 0, outFeatures: 0 };
  const trains = shape.lora === undefined;
  if (adapter === undefined) {
    return matmulOp(tape, shape, stage, opName, `${p}.${name}`, input, weight, output, { groups: [p], trains, savesInput: keeps || quantizedKeeps });
  }
  const base = matmulOp(tape, shape, stage, opName, `${p}.${name}`, input, weight, { name: `${p}.lora.${name}.base_output`, size: output.size }, { groups: [p], trains: false, savesInput: quantizedKeeps });
  const r = shape.lora!.rank * adapter.copies;
  const { s: tokens, e } = shape;
  // PEFT keeps 16-bit models' adapters in fp32 (peft 0.21 peft_model.py line 128,
  // autocast_adapter_dtype=True) and runs them there (tuners/lora/layer.py lines 1089-1113,
  // Linear.forward): x cast to the adapter's dtype (which A saves), A's and B's outputs and the
  // scaled product in fp32, their sum with the 16-bit base output in fp32, cast back to the
  // base's dtype. Counted in the trace of Llama-3.2-1B bf16 with rank-8 adapters.
  const fp32Adapter = shape.loraFp32;
  const ae = fp32Adapter ? 4 : e;
  const widen = (size: Size): Size => ({ fixedBytes: (size.fixedBytes * ae) / e, perSampleBytes: (size.perSampleBytes * ae) / e });
  let adapterInput = fp32Adapter
    ? tape.op(stage, `lora.${name}.cast_input`, [input], [{ name: `${p}.lora.${name}.input_fp32`, size: perSample(4 * tokens * adapter.inFeatures) }])[0]!
    : input;
  // `lora_B(lora_A(dropout(x)))`: with lora_dropout > 0 each adapter drops its own copy of x
  // (native_dropout: the output and a 1-byte mask), and A saves the dropped copy instead of x.
  if (shape.loraDropout > 0) {
    const width = adapter.inFeatures * tokens;
    const [dropped, mask] = tape.op(stage, `lora.${name}.dropout`, [adapterInput], [
      { name: `${p}.lora.${name}.dropout_output`, size: perSample(ae * width) },
      { name: `${p}.lora.${name}.dropout_mask`, size: perSample(width), requiresGrad: false },
    ]);
    tape.ops.at(-1)!.saves.push(mask!);
    adapterInput = dropped!;
  }
  // Under autocast A and B are matmuls like any other: their inputs and weights cast to 16 bits.
  const lora = { groups: [p], trains: true, savesInput: true };
  const a = matmulOp(tape, shape, stage, `lora.${name}.a`, `${p}.lora.${name}.a`, adapterInput, { inFeatures: adapter.inFeatures, outFeatures: r }, { name: `${p}.lora.${name}.a_output`, size: perSample(ae * tokens * r) }, lora);
  const b = matmulOp(tape, shape, stage, `lora.${name}.b`, `${p}.lora.${name}.b`, a, { inFeatures: r, outFeatures: adapter.outFeatures }, { name: `${p}.lora.${name}.b_output`, size: widen(output.size) }, lora);
  const [scaled] = tape.op(stage, `lora.${name}.scale`, [b], [{ name: `${p}.lora.${name}.scaled`, size: widen(output.size) }]);
  if (!fp32Adapter) return tape.op(stage, `lora.${name}.add`, [base, scaled!], [output], { passGradient: true })[0]!;
  const [sum] = tape.op(stage, `lora.${name}.add`, [base, scaled!], [{ name: `${p}.lora.${name}.sum_fp32`, size: widen(output.size) }], { passGradient: true });
  return tape.op(stage, `lora.${name}.cast_output`, [sum!], [output])[0]!;
}

interface LayerHelpers {
  norm: (stage: number, prefix: string, input: number, outputName: string, group: string) => number;
  /** An RMSNorm over `width` elements a token with `rows` statistics (a Q/K norm: heads × head size, heads). */
  rmsNorm: (stage: number, prefix: string, input: number, outputName: string, group: string, shapeOf: { width: number; rows: number; size: (bytes: number) => Size }) => number;
  dropout: (stage: number, prefix: string, input: number, size: Size, outputName: string, p: number, maskSize: Size) => number;
  split: (bytes: number) => Size;
  replicated: (bytes: number) => Size;
  hidden: () => Size;
  /** A linear layer's output across the hidden width (`e` bytes: 16 bits under autocast). */
  linearOutput: () => Size;
  heldKv: boolean;
}

/**
 * Self-attention from the projections' input to the output projection's input (`attention.output`).
 * Returns the value the output projection reads, and the locals the attention module keeps until
 * it returns (after the output projection).
 */
function attention(tape: TrainingTape, shape: Shape, setup: ResolvedSetup, stage: number, p: string, input: number, help: LayerHelpers): { output: number; locals: number[] } {
  const { arch, s, e } = shape;
  const h = arch.hiddenSize;
  const d = arch.headDim;
  const q = e * s * shape.heads * d;
  const kv = e * s * shape.kvHeads * d;
  const scores = e * shape.heads * s * s;
  const flash = isFused(shape.attention);
  const rotary = arch.positions === "rotary" && !arch.vision;
  const cache = help.heldKv ? "kvCache" : "workspace";
  let query: number;
  let key: number;
  let value: number;
  if (arch.fusedQkv) {
    // One projection (GPT-2's c_attn) and views of its output: the KV cache holds the whole storage.
    const qkv = linearOp(tape, shape, stage, p, "qkv", "attention.qkv", input, { name: `${p}.attention.qkv`, size: help.split(q + 2 * kv), category: flash ? "activations" : cache, heldToLoss: help.heldKv });
    [query, key, value] = tape.views(stage, "attention.split", qkv, [help.split(q), help.split(kv), help.split(kv)]) as [number, number, number];
  } else {
    // Flash attention saves the projections' outputs (named as what they are: query, key, value);
    // eager attention saves copies of them, and the projections' outputs are transients.
    // With Q/K norms (Qwen3, Gemma 3) the projections are the norms' saved inputs.
    const projection = (linear: string, name: string, bytes: number, held: boolean) => {
      const normed = arch.qkNorm && name !== "value";
      const rotated = rotary && name !== "value";
      const saved = normed ? `${name}_norm_input` : flash && !rotated ? name : `${name}_proj`;
      // A Q/K norm's input is kept by it only in fp32 (in 16 bits, its fp32 copy is): left to the tape.
      const category = normed ? undefined : flash && !rotated ? "activations" : held && !rotated ? cache : "workspace";
      return linearOp(tape, shape, stage, p, linear, `attention.${name}_proj`, projectionInput, { name: `${p}.attention.${saved}`, size: help.split(bytes), category, heldToLoss: held && !rotated });
    };
    // torchvision's ViT runs nn.MultiheadAttention, whose packed in_proj projects Q, K and V in one
    // F.linear (F.multi_head_attention_forward, self-attention): under autocast one 16-bit copy of
    // the input serves the three, where Hugging Face's separate projections each cast their own.
    const projectionInput = arch.vision && shape.autocast ? tape.op(stage, "attention.in_proj.cast_input", [input], [{ name: `${p}.attention.in_proj.input_16bit`, size: help.split(e * s * h) }])[0]! : input;
    query = projection("q", "query", q, false);
    key = projection("k", "key", kv, help.heldKv);
    value = projection("v", "value", kv, help.heldKv);
    if (arch.qkNorm) {
      // Qwen3's and Gemma 3's q_norm and k_norm are the model's RMSNorm over each head (src above).
      const headNorm = (x: number, name: string, heads: number) =>
        help.rmsNorm(stage, `${p}.attention.${name}_norm`, x, `${p}.attention.${flash && !rotary ? name : `${name}_normed`}`, p, { width: heads * d, rows: heads, size: help.split });
      query = headNorm(query, "query", shape.heads);
      key = headNorm(key, "key", shape.kvHeads);
    }
  }
  /** Values the attention's Python function keeps as locals until it returns (after the output projection). */
  const locals: number[] = [];
  if (rotary) {
    // apply_rotary_pos_emb (transformers 5.18 modeling_llama.py lines 130-160): `q * cos + rotate_half(q) * sin`,
    // rotate_half = `cat((-x2, x1))`: a negated half and the rotated copy, both in q's dtype, and two
    // products and their sum, in cos's dtype — q's own, except under autocast, where cos and sin
    // follow the fp32 residual stream (LlamaRotaryEmbedding.forward, line 127: `cos.to(dtype=x.dtype)`), so the
    // rotated Q and K are fp32. Counted in the torch 2.13 trace of Llama-3.2-1B (vramfit trace, per
    // layer: mul, neg, cat, mul, add for each of Q and K). cos and sin (s × head size, fp32, shared
    // by the layers) are left out.
    const rope = (x: number, name: string, bytes: number, held: boolean): number => {
      const out = help.split(shape.autocast ? (bytes * 4) / e : bytes);
      const op = (step: string, inputs: number[], output: string, size: Size, passGradient = false) =>
        tape.op(stage, `attention.${name}_rope.${step}`, inputs, [{ name: `${p}.attention.${name}_rope_${output}`, size }], { passGradient })[0]!;
      const cosPart = op("cos", [x], "cos", out);
      const negated = op("neg", [x], "neg", help.split(bytes / 2));
      const rotatedHalf = op("cat", [negated, x], "rotated", help.split(bytes));
      const sinPart = op("sin", [rotatedHalf], "sin", out);
      const saved = flash && !shape.autocast ? name : `${name}_embed`;
      return tape.op(stage, `attention.${name}_rope.add`, [cosPart, sinPart], [{ name: `${p}.attention.${saved}`, size: out, heldToLoss: held, ...(held && !flash && { category: cache }) }], { passGradient: true })[0]!;
    };
    query = rope(query, "query", q, false);
    key = rope(key, "key", kv, help.heldKv && !arch.fusedQkv);
    if (flash && shape.autocast) {
      // SDPA is on autocast's 16-bit list: it casts the fp32 rotated Q and K and saves the copies.
      locals.push(query, key);
      const cast = (x: number, name: string, bytes: number) => tape.op(stage, `attention.${name}_cast`, [x], [{ name: `${p}.attention.${name}`, size: help.split(bytes) }])[0]!;
      query = cast(query, "query", q);
      key = cast(key, "key", kv);
    }
  }
  if (flash) {
    // Each fused kernel saves Q, K, V, its output and an fp32 statistic per head and query: flash's
    // and cuDNN's logsumexp / softmax stats (a·s), the memory-efficient kernel's logsumexp padded to
    // 32 queries (aten/src/ATen/native/transformers/cuda/attention.cu, `_efficient_attention_forward`:
    // `ceil_div(M, kAlignLSE) * kAlignLSE`, kAlignLSE = 32).
    const rows = shape.attention === "efficient" ? Math.ceil(s / 32) * 32 : s;
    const [out, lse] = tape.op(stage, "attention.sdpa", [query, key, value], [
      { name: `${p}.attention.output`, size: help.split(q) },
      { name: `${p}.attention.logsumexp`, size: help.split(4 * shape.heads * rows), requiresGrad: false },
    ]);
    tape.ops.at(-1)!.saves.push(query, key, value, out!, lse!);
    // torchvision's nn.MultiheadAttention merges the heads with `permute(2, 0, 1, 3).contiguous()`:
    // a copy, which out_proj saves, after the memory-efficient kernel (its output's strides; the
    // torch 2.13 trace of vit_b_16 in fp32), none after flash (the amp and bf16 traces).
    if (arch.vision && shape.attention === "efficient") {
      return { output: tape.op(stage, "attention.merge_heads", [out!], [{ name: `${p}.attention.merged`, size: help.split(q) }], { passGradient: true })[0]!, locals };
    }
    return { output: out!, locals };
  }
  // matmul copies the permuted heads into contiguous batches, and saves the copies.
  const copy = (source: number, name: string, bytes: number) => tape.op(stage, `attention.${name}_copy`, [source], [{ name: `${p}.attention.${name}`, size: help.split(bytes) }], { passGradient: true })[0]!;
  // Under grouped-query attention K and V reach the scores repeated to every query head: Hugging
  // Face's eager attention calls `repeat_kv` (an expand and a reshape: a copy), and SDPA's math
  // kernel `repeat_interleave`s them for `enable_gqa` (transformers 5.18 modeling_llama.py,
  // eager_attention_forward; aten/src/ATen/native/transformers/attention.cpp, math_sdp).
  const repeated = shape.heads !== shape.kvHeads ? q : kv;
  const qc = copy(query, "query", q);
  const kc = copy(key, "key", repeated);
  const core = (name: string, inputs: number[], output: string, options: { saves?: "output" | "inputs"; passGradient?: boolean } = {}) => {
    const [out] = tape.op(stage, `attention.${name}`, inputs, [{ name: `${p}.attention.${output}`, size: help.split(scores) }], { passGradient: options.passGradient ?? false });
    if (options.saves === "output") tape.ops.at(-1)!.saves.push(out!);
    if (options.saves === "inputs") tape.ops.at(-1)!.saves.push(...inputs);
    return out!;
  };
  const raw = core("scores", [qc, kc], "scores", { saves: "inputs" });
  const scaled = core("scale", [raw], "scaled_scores");
  // GPT-2 masks with torch.where (its backward makes a new gradient); BERT and Llama add the mask.
  const masked = core("mask", [scaled], "masked_scores", { passGradient: !arch.fusedQkv });
  const probs = core("softmax", [masked], "softmax", { saves: "output" });
  let weights = probs;
  if (arch.attentionDropout > 0) {
    weights = help.dropout(stage, `${p}.attention`, probs, help.split(scores), `${p}.attention.dropout_output`, arch.attentionDropout, help.split(shape.heads * s * s));
  }
  const vc = copy(value, "value", repeated);
  const [context] = tape.op(stage, "attention.context", [weights, vc], [{ name: `${p}.attention.context`, size: help.split(q) }], { saves: [weights, vc] });
  // The heads merged back: permute(...).contiguous(), a copy the output projection saves.
  const merged = tape.op(stage, "attention.merge_heads", [context!], [{ name: `${p}.attention.output`, size: help.split(q) }], { passGradient: true })[0]!;
  // BERT's BertSelfAttention.forward keeps its locals (the three projections, the masked scores
  // `attention_scores`) until it returns the merged heads (modeling_bert.py).
  if (arch.postNorm) tape.hold(query, key, value, masked);
  return { output: merged, locals };
}

/** The feed-forward network from its input to the down projection's output. */
function mlp(tape: TrainingTape, shape: Shape, stage: number, p: string, input: number, help: LayerHelpers): number {
  const { arch, s, e } = shape;
  const f = help.split(e * s * shape.ffn);
  const linear = (layerLinear: string, name: string, from: number, output: string, size: Size) => linearOp(tape, shape, stage, p, layerLinear, `mlp.${name}`, from, { name: `${p}.mlp.${output}`, size });
  const elementwise = (name: string, inputs: number[], output: string, saves: number[] | "output" = [], passGradient = false, size = f) => {
    const [out] = tape.op(stage, `mlp.${name}`, inputs, [{ name: `${p}.mlp.${output}`, size }], { passGradient });
    tape.ops.at(-1)!.saves.push(...(saves === "output" ? [out!] : saves));
    return out!;
  };
  if (arch.experts) return moe(tape, shape, stage, p, input, help);
  let down: number;
  if (arch.ffn === "gated") {
    // down(act(gate(x)) * up(x)): act saves its input, the product both factors, down its input.
    let gate: number;
    let up: number;
    if (arch.fusedGateUp) {
      // Phi-3's gate_up_proj: one matrix, its output chunked into gate and up (views of one storage).
      const both = linear("gate_up", "gate_up_proj", input, "gate_up", help.split(2 * e * s * shape.ffn));
      [gate, up] = tape.views(stage, "mlp.chunk", both, [f, f]) as [number, number];
    } else {
      gate = linear("gate", "gate_proj", input, "gate", f);
      up = -1;
    }
    const act = elementwise("act", [gate], "act_output", [gate]);
    if (!arch.fusedGateUp) up = linear("up", "up_proj", input, "up", f);
    down = elementwise("product", [act, up], "down_input", [act, up]);
  } else if (arch.activation === "gelu_new") {
    // 0.5 * u * (1.0 + tanh(sqrt(2/π) * (u + 0.044715 * u³))), op by op as Python evaluates it.
    // Under autocast `torch.pow` is on autocast's fp32 list: u is cast to an fp32 copy (which pow
    // saves), and every op after it promotes to fp32 (the torch 2.13 trace of GPT-2 under amp).
    const u = linear("up", "fc", input, "act_input", f);
    const w = shape.autocast ? help.split(4 * s * shape.ffn) : f;
    const half = elementwise("gelu.half", [u], "gelu_half");
    const powInput = shape.autocast ? elementwise("gelu.upcast", [u], "gelu_input_fp32", [], false, w) : u;
    const cube = elementwise("gelu.cube", [powInput], "gelu_cube", [powInput], false, w);
    const scaledCube = elementwise("gelu.scale_cube", [cube], "gelu_scaled_cube", [], false, w);
    const inner = elementwise("gelu.add", [u, scaledCube], "gelu_inner", [], true, w);
    const scaledInner = elementwise("gelu.scale_inner", [inner], "gelu_scaled_inner", [], false, w);
    const tanh = elementwise("gelu.tanh", [scaledInner], "gelu_tanh", "output", false, w);
    const onePlus = elementwise("gelu.one_plus", [tanh], "gelu_one_plus_tanh", [], true, w);
    down = elementwise("gelu.product", [half, onePlus], "down_input", [half, onePlus], false, w);
  } else {
    const u = linear("up", "fc", input, "act_input", f);
    down = elementwise("act", [u], "down_input", [u]);
  }
  return linearOp(tape, shape, stage, p, "down", "mlp.down_proj", down, { name: `${p}.${arch.sandwichNorms ? "norm_post_mlp.input" : "mlp.output"}`, size: help.linearOutput() });
}

/** GPT-2, Llama, ViT: x + attn(norm1(x)), then + mlp(norm2(·)). */
function preNormLayer(tape: TrainingTape, shape: Shape, setup: ResolvedSetup, i: number, x: number, next: string, help: LayerHelpers): number {
  const { arch, s } = shape;
  const h = arch.hiddenSize;
  const stage = i + 1;
  const p = `layers.${i}`;
  const n1 = help.norm(stage, `${p}.norm1`, x, `${p}.attention.input`, p);
  const { output: merged, locals } = attention(tape, shape, setup, stage, p, n1, help);
  let projected = linearOp(tape, shape, stage, p, "o", "attention.out_proj", merged, { name: `${p}.${arch.sandwichNorms ? "norm_post_attention.input" : "attention.projected"}`, size: help.linearOutput() });
  if (locals.length > 0) tape.hold(...locals);
  // Gemma 2/3 normalize the attention's and the FFN's outputs too (post_attention_layernorm, post_feedforward_layernorm).
  if (arch.sandwichNorms) projected = help.norm(stage, `${p}.norm_post_attention`, projected, `${p}.attention.normalized`, p);
  const attended = help.dropout(stage, `${p}.attention.residual`, projected, tape.sizeOf(projected), `${p}.attention.residual_output`, arch.dropout, help.replicated(s * h));
  const [x2] = tape.op(stage, "attention.residual", [attended, x], [{ name: `${p}.norm2.input`, size: help.hidden() }], { passGradient: true });
  const n2 = help.norm(stage, `${p}.norm2`, x2!, `${p}.mlp.input`, p);
  let out = mlp(tape, shape, stage, p, n2, help);
  if (arch.sandwichNorms) out = help.norm(stage, `${p}.norm_post_mlp`, out, `${p}.mlp.normalized`, p);
  const dropped = help.dropout(stage, `${p}.mlp.residual`, out, tape.sizeOf(out), `${p}.mlp.residual_output`, arch.dropout, help.replicated(s * h));
  const output = tape.op(stage, "mlp.residual", [dropped, x2!], [{ name: next, size: help.hidden() }], { passGradient: true })[0]!;
  // GPT2Block.forward keeps `attn_output` (the attention's dropout output) until it returns (modeling_gpt2.py).
  if (arch.fusedQkv) tape.hold(attended);
  return output;
}

/** BERT: norm1(x + attn(x)), then norm2(· + mlp(·)). */
function postNormLayer(tape: TrainingTape, shape: Shape, setup: ResolvedSetup, i: number, x: number, next: string, help: LayerHelpers): number {
  const { arch, s } = shape;
  const h = arch.hiddenSize;
  const stage = i + 1;
  const p = `layers.${i}`;
  const { output: merged, locals } = attention(tape, shape, setup, stage, p, x, help);
  const projected = linearOp(tape, shape, stage, p, "o", "attention.out_proj", merged, { name: `${p}.attention.projected`, size: help.linearOutput() });
  const attended = help.dropout(stage, `${p}.attention.residual`, projected, tape.sizeOf(projected), `${p}.attention.residual_output`, arch.dropout, help.replicated(s * h));
  if (locals.length > 0) tape.hold(...locals);
  const [sum1] = tape.op(stage, "attention.residual", [attended, x], [{ name: `${p}.norm1.input`, size: help.hidden() }], { passGradient: true });
  const y = help.norm(stage, `${p}.norm1`, sum1!, `${p}.mlp.input`, p);
  // BertSelfOutput.forward: `hidden_states = self.LayerNorm(hidden_states + input_tensor)` keeps the
  // dropout's output (the old hidden_states) until the norm returns.
  tape.hold(attended);
  const out = mlp(tape, shape, stage, p, y, help);
  const dropped = help.dropout(stage, `${p}.mlp.residual`, out, tape.sizeOf(out), `${p}.mlp.residual_output`, arch.dropout, help.replicated(s * h));
  const [sum2] = tape.op(stage, "mlp.residual", [dropped, y], [{ name: `${p}.norm2.input`, size: help.hidden() }], { passGradient: true });
  const layerOutput = help.norm(stage, `${p}.norm2`, sum2!, next, p);
  tape.hold(dropped); // BertOutput.forward, likewise
  return layerOutput;
}

/**
 * A mixture of experts in place of the FFN, as Hugging Face's MixtralSparseMoeBlock runs it (the
 * names and sizes of src/plan/moe.ts): the router (its logits returned with the outputs), the
 * fp32 softmax it saves, top-k's int64 indices and the routing weights; the routed tokens gathered
 * (saved by the experts' gate and up projections when they train), each expert's SwiGLU on its
 * share (`C × k × s` token slots in all), its output weighted by the routing weight (which saves
 * both when the router trains), and the weighted outputs added into the layer's output.
 */
function moe(tape: TrainingTape, shape: Shape, stage: number, p: string, input: number, help: LayerHelpers): number {
  const { arch, s, e } = shape;
  const h = arch.hiddenSize;
  const experts = arch.experts!;
  const routed = routedTokens(arch, s, shape.capacityFactor);
  const trains = {
    router: shape.lora === undefined,
    gateUp: savesInputOf(arch, shape.lora, "gate") || savesInputOf(arch, shape.lora, "up"),
    down: savesInputOf(arch, shape.lora, "down"),
  };
  const routedHidden = perSample(e * routed * h);
  const routedFfn = help.split(e * routed * shape.ffn);
  const [logits] = tape.op(stage, "moe.router", [input], [{ name: `${p}.moe.router_logits`, size: help.replicated(e * s * experts.count), heldToLoss: true }], {
    saves: trains.router ? [input] : [],
    groups: [p],
    trains: trains.router,
  });
  const [probs] = tape.op(stage, "moe.softmax", [logits!], [{ name: `${p}.moe.routing_probs_fp32`, size: help.replicated(4 * s * experts.count) }]);
  tape.ops.at(-1)!.saves.push(probs!);
  const [weights, indices] = tape.op(stage, "moe.topk", [probs!], [
    { name: `${p}.moe.routing_weights`, size: help.replicated(4 * s * experts.perToken) },
    { name: `${p}.moe.expert_indices`, size: help.replicated(8 * s * experts.perToken), requiresGrad: false },
  ]);
  tape.ops.at(-1)!.saves.push(indices!);
  const [gathered] = tape.op(stage, "moe.gather", [input], [{ name: `${p}.moe.expert_inputs`, size: routedHidden }]);
  const expertLinear = (name: string, from: number, output: string, size: Size, keeps: boolean) =>
    tape.op(stage, `moe.experts.${name}`, [from], [{ name: `${p}.moe.${output}`, size }], { saves: keeps ? [from] : [], groups: [p], trains: shape.lora === undefined })[0]!;
  const gate = expertLinear("gate_proj", gathered!, "experts.gate", routedFfn, trains.gateUp);
  const [act] = tape.op(stage, "moe.experts.act", [gate], [{ name: `${p}.moe.experts.act_output`, size: routedFfn }], { saves: [gate] });
  const up = expertLinear("up_proj", gathered!, "experts.up", routedFfn, trains.gateUp);
  const [product] = tape.op(stage, "moe.experts.product", [act!, up], [{ name: `${p}.moe.experts.down_input`, size: routedFfn }], { saves: [act!, up] });
  const out = expertLinear("down_proj", product!, "expert_outputs", routedHidden, trains.down);
  const [weighted] = tape.op(stage, "moe.weight", [out, weights!], [{ name: `${p}.moe.weighted_outputs`, size: routedHidden }], { saves: trains.router ? [out, weights!] : [weights!] });
  return tape.op(stage, "moe.combine", [weighted!], [{ name: `${p}.mlp.output`, size: help.hidden() }])[0]!;
}

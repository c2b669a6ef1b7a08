// Mixture of experts (Mixtral): routed tokens, router logits, expert parallelism.
import { invalidArgument } from "../errors.js";
import type { TransformerArchitecture } from "../workload/transformer.js";
import type { StateGroup } from "./modelStates.js";

/** A per-sample activation of a layer and whether tensor parallelism splits it (transformerPlan's convention). */
export interface MoeActivation {
  name: string;
  bytes: number;
  parallel: "split" | "replicated";
}

/**
 * Token slots the experts of one layer process per sample: `C × k × s`. With the default
 * capacity factor 1 that is exactly every token's k routed copies, as Hugging Face's
 * MixtralSparseMoeBlock runs them (dropless, no padding); C > 1 pads each expert's buffer to
 * `C × k × s / E` tokens, as capacity-based implementations do (GShard, Lepikhin et al. 2021;
 * Switch, Fedus et al. 2022, §2.1; Megatron-Core's `moe_expert_capacity_factor` with padding).
 */
export function routedTokens(arch: TransformerArchitecture, s: number, capacityFactor: number): number {
  const perToken = arch.experts?.perToken ?? 1;
  return Math.ceil(capacityFactor * perToken * s);
}

/**
 * What one MoE layer's FFN saves for backward, per sample, in Hugging Face's Mixtral (op by op):
 * the router (a linear on the normed hidden states) saves its input when it trains; the softmax
 * its fp32 routing probabilities (s × E); top-k its int64 expert indices; each expert gathers its
 * tokens (a copy, saved by w1 and w3 when they train), SiLU saves w1's output, the product saves
 * both factors, w2 its input when it trains, and the output × routing weight saves the expert's
 * output when the router trains. `router logits` (e·s·E) are what the model returns for the
 * auxiliary load-balancing loss. `ffn` is the expert width on this tensor-parallel rank.
 */
export function moeLayerActivations(
  arch: TransformerArchitecture,
  prefix: string,
  sizes: { s: number; e: number; ffn: number; capacityFactor: number },
  trains: { router: boolean; gateUp: boolean; down: boolean },
): MoeActivation[] {
  const experts = arch.experts!;
  const { s, e, ffn } = sizes;
  const h = arch.hiddenSize;
  const routed = routedTokens(arch, s, sizes.capacityFactor);
  const out: MoeActivation[] = [];
  const replicated = (name: string, bytes: number) => out.push({ name: `${prefix}.${name}`, bytes, parallel: "replicated" });
  const split = (name: string, bytes: number) => out.push({ name: `${prefix}.${name}`, bytes, parallel: "split" });
  if (trains.router) replicated("mlp.input", e * s * h);
  replicated("moe.router_logits", e * s * experts.count);
  replicated("moe.routing_probs_fp32", 4 * s * experts.count);
  replicated("moe.expert_indices", 8 * s * experts.perToken);
  replicated("moe.routing_weights", 4 * s * experts.perToken);
  if (trains.gateUp) replicated("moe.expert_inputs", e * routed * h);
  split("moe.experts.gate", e * routed * ffn);
  split("moe.experts.act_output", e * routed * ffn);
  split("moe.experts.up", e * routed * ffn);
  if (trains.down) split("moe.experts.down_input", e * routed * ffn);
  if (trains.router) replicated("moe.expert_outputs", e * routed * h);
  return out;
}

/**
 * The MoE FFN's transient tensors in an inference forward pass: the router's logits and fp32
 * probabilities, the layer's output being accumulated, and one expert at work on its share of
 * the tokens (`C × k × s / E`): its gathered input, gate, up and product, and its output.
 */
export function moeInferenceWorkspace(arch: TransformerArchitecture, sizes: { s: number; e: number; ffn: number; capacityFactor: number }): { name: string; bytes: number }[] {
  const experts = arch.experts!;
  const { s, e, ffn } = sizes;
  const h = arch.hiddenSize;
  const perExpert = Math.ceil(routedTokens(arch, s, sizes.capacityFactor) / experts.count);
  return [
    { name: "workspace.moe.router_logits", bytes: e * s * experts.count },
    { name: "workspace.moe.routing_probs_fp32", bytes: 4 * s * experts.count },
    { name: "workspace.moe.output", bytes: e * s * h },
    { name: "workspace.moe.expert_input", bytes: e * perExpert * h },
    { name: "workspace.moe.expert_gate_act", bytes: e * perExpert * ffn },
    { name: "workspace.moe.expert_up", bytes: e * perExpert * ffn },
    { name: "workspace.moe.expert_product", bytes: e * perExpert * ffn },
    { name: "workspace.moe.expert_output", bytes: e * perExpert * h },
  ];
}

/**
 * Expert parallelism over `ep` ranks (DeepSpeed-MoE, Rajbhandari et al. 2022; Megatron-Core):
 * each rank holds `E / ep` experts of every layer, the rest of the model whole; expert-parallel
 * ranks are data-parallel ranks, so ZeRO partitions the experts' states over the `gpus / ep`
 * ranks that hold the same experts. With balanced routing each rank's experts receive, over the
 * all-to-all, as many token slots as its own batch routes: activations per rank are unchanged.
 */
export function expertParallelGroups(groups: readonly StateGroup[], arch: TransformerArchitecture, ep: number, gpus: number): readonly StateGroup[] {
  if (ep === 1) return groups;
  const count = arch.experts?.count;
  if (count === undefined) throw invalidArgument("--ep", ep, "1 for a model without experts (expert parallelism shards a mixture of experts)");
  if (count % ep !== 0) throw invalidArgument("--ep", ep, `a divisor of the ${count} experts`);
  if (gpus % ep !== 0) throw invalidArgument("--ep", ep, `a divisor of --gpus (${gpus}): expert-parallel ranks are data-parallel ranks`);
  return groups.map((g) =>
    g.experts === true
      ? {
          ...g,
          count: Math.ceil(g.count / ep),
          tensorParallelCount: Math.ceil(g.tensorParallelCount / ep),
          ...(g.weightBytes !== undefined && { weightBytes: Math.ceil(g.weightBytes / ep) }),
          dataParallelRanks: gpus / ep,
        }
      : g,
  );
}
